import { CONSOLE_DEFAULTS } from '@tidemark/console';
import { GATEWAY_DEFAULTS as GATEWAY } from '@tidemark/gateway';
import { KAFKA_LOG_DEFAULTS, TOPIC_LAYOUT_DEFAULTS as TOPICS } from '@tidemark/kafka';
import { WORKER_DEFAULTS as WORKER } from '@tidemark/worker';
import { CONSOLE_PORT } from './console.js';
import { DEV_DATA, DEV_PORT } from './flags/dev-defaults.js';
import { DEV_SSE_RETRY_MS } from './flags/drain.js';
import { GATEWAY_GROUP } from './flags/group.js';
import { formatDuration as d } from './flags/ttl.js';

// Every default below is read from the options' own tables (GATEWAY_DEFAULTS, WORKER_DEFAULTS, …),
// so the help cannot drift from what the servers do; cli.test.ts checks every declared flag is here.
const SERVER_INFO = `${WORKER.serverInfo.name} ${WORKER.serverInfo.version}`;

/** Each command's `--help`. */
export const HELP: Record<string, string> = {
  console: `Usage: tidemark console [--brokers <list>] [--port ${CONSOLE_PORT}] [--host 127.0.0.1] [--prefix ${TOPICS.prefix}]

The web console over a Kafka deployment, read-only: it reads the topics (sessions, stream heads,
events, requests) and never writes. Sessions, calls and their generations, resets, tasks and a live
tail. Resume decisions are not in the log: each gateway exports them (mcp.resume spans,
tidemark.resume metric), and tidemark dev's console lists them. Answers this machine only (loopback
peers and Host); reach it from elsewhere with an SSH tunnel or kubectl port-forward.

  --port <n>            port to listen on (0: any free port). Default ${CONSOLE_PORT}
  --host <addr>         a loopback address to bind. Default 127.0.0.1
  --trace-url <url>     link trace ids to a viewer: a URL with {traceId} in it
  --session-ttl <d>     the gateways' session TTL, to show when sessions expire. Default ${d(CONSOLE_DEFAULTS.sessionTtlMs)}
  --auth-tokens <file>, --auth-jwks <url|file> --auth-issuer <iss> --auth-audience <aud>,
  --public-url <url>, --auth-scopes <list>, --auth none
                        ask for a token as the gateways do; a subject sees its own sessions
  --brokers, --prefix, --tls, --tls-*, --sasl-* as for the gateway`,
  init: `Usage: tidemark init [dir] [--mcp-server <name>=<command line>]...

Writes a ready project into dir (default: here): tools.ts (a tool module), tools.test.ts (its test
with runTool), a README, and a package.json with "type": "module", npm start (tidemark dev --watch
on tools.ts), npm test (node --test) and the optional node-<os>-<arch> packages, so both run on
Node 24 whatever the machine's Node. Files already there are kept; package.json entries you have
are kept. Then: npm install.

  --mcp-server <name>=<command line>   a project hosting existing MCP servers instead (repeatable;
                        as for dev): their servers file mcp-servers.json, a README, and npm start
                        serving them (tidemark dev --mcp-servers-file ./mcp-servers.json)`,
  check: `Usage: tidemark check <mcp-url> [--token-file <file>]

Checks that a deployment serves: the gateway's /readyz (broker reachable, topics valid), then a
2026-07-28 server/discover that goes through the log to a worker and back. Without a token, a 401
naming the gateway's authentication counts as serving; with --token-file (a bearer token) discover
must answer. Exit 0 serving, 1 not. helm test runs it against the release.

  --token-file <file>  a bearer token to present`,
  dev: `Usage: tidemark dev [--port ${DEV_PORT}] [--host 127.0.0.1] [--tools <module>...] [--data ${DEV_DATA}]

Gateway, worker and an embedded durable log (a SQLite file under --data) in one process: no broker.
Single-replica by definition. A restart on the same --data forgets nothing: sessions stay valid,
unfinished calls run again as a new generation, resuming clients are reset, never spliced.

  --port <n>         port to listen on (0: any free port). Default ${DEV_PORT}
  --host <addr>      address to bind. Default 127.0.0.1
  --allow-remote     required to bind anything but a loopback address (dev has no auth)
  --tools <module>   tool module to load (repeatable, or comma-separated). Default: the examples
                     (none with --mcp-server)
  --mcp-server <name>=<command line>
                     host a stdio MCP server in any language: its tools are served as these
                     (repeatable; the command line split as a shell would, run without one);
                     <name>=https://… connects to a Streamable HTTP server instead
  --mcp-servers-file <f>  hosted servers as a JSON array of { name, command | url, args, env,
                     cwd, processes, prefix }
  --mcp-server-processes <n>  processes (or sessions) of each hosted server. Default 2
  --mcp-server-prefix  serve a hosted server's tools as <name>_<tool>
  --allow-loopback-mcp-servers  a hosted server's URL may be http to 127.0.0.1/::1
  --watch            reload a tool module when its file changes; sessions live on, clients are
                     told the tools changed (notifications/tools/list_changed)
  --data <dir>       where the log and the event-id secret live (0700). Default ${DEV_DATA}
  --auth-tokens <file>, --auth-jwks <url|file> --auth-issuer <iss> --auth-audience <aud>,
  --public-url <url>, --auth-scopes <list>, --auth none
                     authenticate clients as the gateway does. Default: none (loopback only)
  --max-body-bytes, --max-streams-per-session, --max-streams-per-subject,
  --max-sessions-per-subject, --max-requests-per-second, --max-connections,
  --max-failed-auth-per-minute, --trusted-proxy, --log-timeout
                     the gateway's limits (see tidemark gateway --help)
  --max-concurrent-calls, --max-concurrent-tasks, --max-calls-per-subject, --max-tasks-per-subject,
  --max-queued-calls-per-subject, --max-result-bytes
                     the worker's slots, fair shares and largest result (see tidemark worker --help)
  --allow-loopback-webhooks, --max-subscriptions-per-subject, --subscription-ttl
                     webhook subscriptions of the Events extension (see tidemark worker --help)
  --session-ttl <d>  a session with no request and no open stream this long expires, and its
                     running calls are stopped (its next request gets 404; clients
                     re-initialize). 90s, 30m, 1h, 7d. Default ${d(WORKER.sessionTtlMs)}
  --result-ttl <d>   a finished call's result is kept this long for a resume. Default ${d(WORKER.resultTtlMs)}
  --resume-window <d> how long a dropped client can resume (retention of requests and events).
                     Default ${d(TOPICS.resumeWindowMs)}
  --sse-retry <d>    the retry hint 2025-11-25 clients wait before reconnecting (the official
                     TypeScript and Python clients try twice): long enough to ride out a restart
                     of dev. Default ${d(DEV_SSE_RETRY_MS)}
  --drain-timeout <d> on SIGTERM, the answers to 2026-07-28 requests in flight may end this long
                     before dev stops. Default ${d(GATEWAY.drainTimeoutMs)}
  --server-idle <d>  an idle session's MCP server is dropped after this (restored on its next
                     request). Default ${d(WORKER.serverIdleMs)}
  --handoff-timeout <d> on SIGTERM, calls running may end this long before dev stops (the rest
                     run again after a restart). 0: at once. Default ${d(WORKER.handoffTimeoutMs)}
  --tasks <mode>     when a 2026-07-28 tools/call of a client declaring the Tasks extension
                     becomes a durable task: never | tool (as the module's taskSupport says) |
                     always. Default ${GATEWAY.tasks}
  --task-ttl <d>     a task's ttlMs: unfinished by then it fails; finished, it is kept at least
                     this long after its creation. Default ${d(WORKER.taskTtlMs)}
  --task-poll-interval <d>
                     the pollIntervalMs tasks suggest to clients. Default ${d(WORKER.taskPollIntervalMs)}
  --server-name <n>, --server-version <v>
                     the serverInfo clients see in initialize. Default ${SERVER_INFO}
  --instructions <text>
                     the server's instructions to clients (each module's own are added after)
  --metrics-port <n> serve Prometheus metrics at :<n>/metrics (beside OTLP, when configured)
  --trace-events     a span for every event (default: a stream's milestones — request, log hops,
                     terminal record, resets — with each event carrying its trace context)
  --console on|off   the web console at /console: sessions, calls and their generations, resets,
                     resume decisions, tasks, a live tail. This machine only; with --auth-* it asks
                     for a token and shows that subject's sessions. Default on
  --trace-url <url>  link each call's trace id to a trace viewer: a URL with {traceId} in it, e.g.
                     http://localhost:16686/trace/{traceId}`,
  gateway: `Usage: tidemark gateway --port <n> (--auth-tokens <file> | --auth-jwks <url|file> ... | --auth none)
                        [--host 127.0.0.1] [--brokers <list>] [--secret-file <path>]

  --port <n>             port to listen on (required)
  --host <addr>          address to bind. Default 127.0.0.1 (a container: 0.0.0.0)

Authentication (required: exactly one choice; sessions are bound to the subject, tools see it):
  --auth-tokens <file>   lines "<token> <subject>" (tokens of 16+ characters; # comments)
  --auth-jwks <url|file> OAuth 2.1 bearer JWTs, checked against these keys, with
  --auth-issuer <iss>    the expected issuer, and
  --auth-audience <aud>  the expected audience
  --public-url <url>     the MCP URL clients use, for /.well-known/oauth-protected-resource
                         (default: --auth-audience, when it is a URL)
  --auth-scopes <list>   the scopes a client asks for when it signs in (the metadata's
                         scopes_supported, a 401's scope): those your tools' requiredScopes name
  --auth none            no authentication: anyone who reaches the port may call every tool

Limits (each answered with a clear 4xx; see README "Security"):
  --max-body-bytes <n>          request body. Default ${GATEWAY.maxBodyBytes} (413 beyond)
  --max-streams-per-session <n> open SSE streams of a session on this replica. Default ${GATEWAY.maxStreamsPerSession} (429)
  --max-streams-per-subject <n> open SSE streams of a subject (no auth: of a non-loopback address)
                                on this replica, every kind. Default ${GATEWAY.maxStreamsPerSubject} (429)
  --max-sessions-per-subject <n> live sessions a subject started on this replica. Default ${GATEWAY.maxSessionsPerSubject} (429)
  --max-requests-per-second <n> per subject (no auth: per non-loopback address). Default ${GATEWAY.maxRequestsPerSecond} (429)
  --max-connections <n>         connections held at once. Default ${GATEWAY.maxConnections}
  --max-failed-auth-per-minute <n>  failed authentications of one address per minute; past it
                                429 before the token is verified. Default ${GATEWAY.maxFailedAuthPerMinute}
  --trusted-proxy <addr|cidr>   a proxy whose X-Forwarded-For is believed (repeatable; also
                                loopback, linklocal, uniquelocal). Default: none
  --log-timeout <d>             one read or write of the log a client waits on; past it 503 with
                                Retry-After (a gateway cut from its brokers hears nothing, not an
                                error). Default ${d(GATEWAY.logTimeoutMs)}
  --sse-retry <d>               the retry hint 2025-11-25 clients wait before reconnecting
                                (priming event, drain). Default ${d(GATEWAY.retryMs)}: a drained client reconnects
                                to another replica
  --drain-timeout <d>           on SIGTERM, session streams end at once with a resume point; the
                                answers to 2026-07-28 requests in flight (closing one cancels its
                                call) may end this long first. Keep it below the termination grace
                                period. Default ${d(GATEWAY.drainTimeoutMs)}
  --session-ttl <d>             the workers' session TTL: open streams keep a session alive by
                                telling its worker three times per TTL. Default ${d(GATEWAY.sessionTtlMs)}
  --tasks <mode>                when a 2026-07-28 tools/call of a client declaring the Tasks
                                extension becomes a durable task: never | tool (as the tool's
                                module declares, taskSupport) | always. Default ${GATEWAY.tasks}

Kafka and the rest:
  --brokers <list>       Kafka bootstrap host:port[,host:port]; or KAFKA_BROKERS
  --secret-file <path>   the event-id secret (>= 32 bytes, shared by every replica); or TIDEMARK_SECRET
  --previous-secret-file <path>  a secret from before a rotation: ids it signed still verify
                         (repeatable; or TIDEMARK_PREVIOUS_SECRET). See "Rotating the secret"
  --event-id-version <1|2>  the format new event ids are minted in (or TIDEMARK_EVENT_ID_VERSION).
                         Default 1: gateways of 0.1.0 verify only it. Set 2 (a cheaper MAC) once
                         every gateway runs this release; both always verify
  --prefix <p>           topic prefix. Default ${TOPICS.prefix}
  --group <g>            the gateways' consumer group: they share out the partitions of events,
                         and each mints the session and task ids it creates onto its share, so each
                         reads about its share of events (README "Scaling"). none: keys land on
                         any partition. Default ${GATEWAY_GROUP} (needs group Read in the ACLs)
  --group-session-timeout <d>, --group-protocol <p>  as the worker's
  --allowed-origin <o>   Origin allowed (repeatable); default loopback origins only
  --allowed-host <h>     Host header allowed (repeatable; DNS-rebinding protection); default on a
                         loopback address: loopback names only; elsewhere any
  --tls                  connect to Kafka with TLS (the system's trusted CAs)
  --tls-ca <file>        TLS, trusting this CA (PEM): a private cluster CA (Strimzi, self-managed)
  --tls-cert <file>      mutual TLS: this client certificate (PEM), with
  --tls-key <file>       its private key (PEM)
  --sasl-mechanism <m>   PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512, with --sasl-username and
                         --sasl-password-file <file> (or KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD;
                         --sasl-password works, with a warning: ps shows it); OAUTHBEARER with
                         --sasl-token-file <file> (read again for every connection, so it may rotate).
                         PLAIN and OAUTHBEARER need TLS, or --sasl-allow-plaintext

Metrics: --metrics-port <n> serves Prometheus metrics at :<n>/metrics (beside OTLP traces and
metrics, when OTEL_EXPORTER_OTLP_ENDPOINT is set). --trace-events: a span for every event, not only
a stream's milestones (or TIDEMARK_TRACE_EVENTS=true).

Health: GET /healthz (alive), GET /readyz (broker reachable, topics valid).

Console: --console on serves the web console at /console on the same port, to this machine only
(loopback peers and Host: kubectl port-forward to one pod), with the endpoint's authentication: this
replica's resume decisions beside what the log holds. --trace-url <url> links trace ids. Default off.`,
  worker: `Usage: tidemark worker --tools <module>... | --mcp-server <name>=<cmd>... [--brokers <list>] [--health-port <n>]

  --tools <module>       tool module to load (repeatable, or comma-separated; this or
                         --mcp-server is required)
  --mcp-server <name>=<command line>
                         host a stdio MCP server in any language: its tools are served as the
                         worker's own, each call a durable, resumable execution (repeatable; the
                         command line split as a shell would, run without one). <name>=https://…
                         connects to a Streamable HTTP server instead, held to the webhooks'
                         rules: https, public addresses only, the address pinned
  --mcp-servers-file <f> hosted servers as a JSON array of { name, command | url, args, env, cwd,
                         processes, prefix } (the chart's worker.mcpServers)
  --mcp-server-processes <n>  processes (or sessions) of each hosted server. Default 2
  --mcp-server-prefix    serve a hosted server's tools as <name>_<tool> (many servers, one endpoint)
  --allow-loopback-mcp-servers  a hosted server's URL may be http to 127.0.0.1/::1. Development
                         and tests only
  --brokers <list>       Kafka bootstrap host:port[,host:port]; or KAFKA_BROKERS
  --prefix <p>           topic prefix. Default ${TOPICS.prefix}
  --group <g>            consumer group. Default ${WORKER.group}
  --secret-file <f>      the gateways' event-id secret (or TIDEMARK_SECRET; required): the worker
                         takes only requests a gateway sealed; others are dropped and counted
  --previous-secret-file <f>  a secret from before a rotation, still accepted (repeatable; or
                         TIDEMARK_PREVIOUS_SECRET)
  --accept-unsealed      run without the secret: whoever can write the requests topic is trusted
                         to say which subject a request comes from (a warning at start)
  --public-url <url>     the MCP URL clients use (through the ingress): signal URLs (ex.signal)
                         are <url>/signals/<token>, served by every gateway. Default ${WORKER.publicUrl}
  --group-session-timeout <d>
                         after a worker dies without leaving (kill -9, a lost node), its partitions
                         and running calls wait this long before another worker takes them over.
                         Within the brokers' bounds: group.consumer.min.session.timeout.ms (45s
                         unless lowered) on the consumer protocol, group.min.session.timeout.ms
                         (6s) on the classic one. Default ${d(KAFKA_LOG_DEFAULTS.groupSessionTimeoutMs)}
  --group-protocol <p>   consumer (KIP-848: the broker assigns partitions, a scale event moves only
                         those it must), classic, or auto: consumer unless the brokers refuse the
                         session timeout on it (group.consumer.min.session.timeout.ms is 45s unless
                         lowered), then classic, which allows it — said at start. A broker that
                         refuses consumer (before Kafka 4.0) gets classic, with a warning. Default
                         ${KAFKA_LOG_DEFAULTS.groupProtocol}
  --handoff-timeout <d>  a worker giving up partitions (SIGTERM, or workers scaling) stops taking
                         their requests at once — another worker serves them — and lets its running
                         calls end, up to this long; the next owner waits for them instead of
                         running them again. Only calls that outlive it are taken over (a reset).
                         0: at once. Keep it below the termination grace period. Default ${d(WORKER.handoffTimeoutMs)}
  --sleep-in-memory <d>  a task's durable sleep (ex.sleep) shorter than this waits in memory, its
                         slot given back; a longer one leaves memory (a timer is all that is kept)
                         and its request is dispatched again at its wake time. 0: every sleep leaves
                         memory. Default ${d(WORKER.sleepInMemoryMs)}
  --health-port <n>      serve /healthz (503 when a partition's read loop has not come back for a
                         minute while call slots are free: wedged) and /readyz on this port
  --metrics-port <n>     serve Prometheus metrics at :<n>/metrics
  --trace-events         a span for every event written (default: a stream's start and terminal)
  --session-ttl <d>      a session with no request and no open stream this long expires: its
                         record and results are tombstoned, its next request gets "session not
                         found" (clients re-initialize). 90s, 30m, 1h, 7d. Default ${d(WORKER.sessionTtlMs)}
  --result-ttl <d>       a finished call's head and final result are kept this long after it
                         finished (a resume after its events expired gets it). Default ${d(WORKER.resultTtlMs)}
  --server-idle <d>      an idle session's MCP server is dropped after this (restored from the log
                         on its next request). Default ${d(WORKER.serverIdleMs)}
  --task-ttl <d>         a task's ttlMs (Tasks extension): unfinished by then it fails; finished,
                         it is kept at least this long after its creation. Default ${d(WORKER.taskTtlMs)}
  --task-poll-interval <d> the pollIntervalMs tasks suggest to clients. Default ${d(WORKER.taskPollIntervalMs)}
  --max-concurrent-calls <n>  calls running at once. Default ${WORKER.maxConcurrentCalls}
  --max-concurrent-tasks <n>  tasks running at once, in slots of their own (a long task never
                         holds a call's slot). Default ${WORKER.maxConcurrentTasks}
  --max-calls-per-subject <n>, --max-tasks-per-subject <n>
                         one subject's share (no auth: one address's); past it, its requests wait
                         fairly behind other subjects'. Default half of each
  --max-queued-calls-per-subject <n>  one subject's requests waiting for a slot; more are
                         answered "retry later". Default ${WORKER.maxQueuedCallsPerSubject}
  --max-result-bytes <n> the largest message a tool sends (its result above all), in JSON bytes;
                         past one record of the log (4 MiB) it is written in parts, past this it
                         is answered with an error naming its size and the limit. Default ${WORKER.maxResultBytes}
  --allow-loopback-webhooks  Events: webhook callbacks may be http to 127.0.0.1/::1, and clients
                         without authentication may subscribe. Development and tests only
  --max-subscriptions-per-subject <n>  Events: webhook subscriptions one subject may hold.
                         Default ${WORKER.maxSubscriptionsPerSubject}
  --subscription-ttl <d> Events: a subscription's lifetime when the client asks for none (it
                         refreshes before then; at most 7d). Default ${d(WORKER.subscriptionTtlMs)}
  (a tool module that offers event types needs --secret-file: it signs their cursors)
  --server-name <n>, --server-version <v>
                         the serverInfo clients see in initialize. Default ${SERVER_INFO}
  --instructions <text>  the server's instructions to clients (each module's own are added after)
  --tls, --tls-*, --sasl-* as for the gateway`,
  topics: `Usage: tidemark topics create|check [--brokers <list>] [--partitions ${TOPICS.partitions}] [--replication-factor ${TOPICS.replicationFactor}] [--audit-retention 30d] [--prefix ${TOPICS.prefix}]

  create   creates the topics with explicit configs (idempotent), then checks them
  check    verifies them (configs, equal partition counts, and records still where their keys
           hash: partitions added to live topics are refused, docs/scaling.md); exits 1 listing
           every problem

  --brokers <list>         Kafka bootstrap host:port[,host:port]; or KAFKA_BROKERS
  --partitions <n>         partitions of every topic. Default ${TOPICS.partitions}
  --replication-factor <n> Default ${TOPICS.replicationFactor}
  --audit-retention <d>    how long the audit trail keeps a call's record. Default 30d
  --prefix <p>             topic prefix. Default ${TOPICS.prefix}
  --tls, --tls-*, --sasl-*  as for the gateway`,
  calls: `Usage: tidemark calls list|wake|cancel [<owner> [<journal>]] [--brokers <list>] [--prefix ${TOPICS.prefix}]

The calls resting in the log — asleep (ex.sleep) or waiting for a signal (ex.signal) — and their
repairs, on a Kafka deployment.

  list                    one JSON line per resting call, the soonest first: its owner (session,
                          routing key or task id), journal, kind, name, since, and wakeAt or
                          expiresAt (a signal without a timeout: null)
  wake <owner> <journal>  ends the call's sleeps now: the worker that owns it runs it on at once
  cancel <task id>        cancels a task, asleep, waiting or running, as its client's tasks/cancel

  --secret-file <f>       the gateways' secret (or TIDEMARK_SECRET): wake and cancel are written
                          to the requests topic sealed, as a gateway writes; list needs none
  --brokers <list>        Kafka bootstrap host:port[,host:port]; or KAFKA_BROKERS
  --prefix <p>            topic prefix. Default ${TOPICS.prefix}
  --tls, --tls-*, --sasl-*  as for the gateway`,
  audit: `Usage: tidemark audit [--since 24h] [--until <d>] [--subject <s>] [--format jsonl] [--brokers <list>] [--prefix ${TOPICS.prefix}]

The audit trail of a Kafka deployment: one JSON line per call that ended in the window — when,
owner and stream, tool, subject, client id, scopes, a digest of its arguments (sha256, never the
arguments), idempotency key, outcome (answered, error, refused and why, cancelled) and the
executions it took — in the order the calls ended. A call run again after its worker died is one
line, its last record. The same records go out as OpenTelemetry log records (OTEL_LOGS_EXPORTER).

  --since <d|date>        calls that ended this long ago or later (90m, 24h, 7d), or since an
                          ISO date (2026-12-01T00:00:00Z). Default 24h
  --until <d|date>        and before this. Default now
  --subject <s>           only this subject's calls
  --format jsonl          the only format
  --brokers <list>        Kafka bootstrap host:port[,host:port]; or KAFKA_BROKERS
  --prefix <p>            topic prefix. Default ${TOPICS.prefix}
  --tls, --tls-*, --sasl-*  as for the gateway`,
};
