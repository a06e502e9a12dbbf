// `npm run e2e:k8s`: the chart on a real single-node cluster (test/k8s/cluster.ts) with the image
// `npm run image:build` made. Every step prints what it ran and what it saw; --transcript FILE
// writes that as Markdown (docs/how-to/kubernetes.md quotes one). Exits 1 at the first failure.
//
//   1. The CRDs of the objects the chart can make (ServiceMonitor, PrometheusRule, ScaledObject,
//      TriggerAuthentication), from their projects' modules on the Go module proxy.
//   2. Every values file in helm/tidemark/ci rendered and admitted by the API server (dry run).
//   3. helm install: every pod Ready (probes answered), the topics Job done, helm test passing,
//      calls through the gateways' Service.
//   4. The worker pods deleted during a call: the exact result, or an explicit reset.
//   5. helm upgrade to another image tag while a client calls throughout: 0 failed.
//   6. helm uninstall: nothing of the release left.
// (Runs under Node's type stripping.)
import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TrackedClient } from '../e2e/calls.ts';
import { helmBinary } from '../support/prerequisites.ts';
import { CRDS, KUBERNETES, sleep, startCluster, type Cluster } from './cluster.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const chart = join(root, 'helm/tidemark');
const NS = 'tidemark';
const RELEASE = 'tm';
const transcript: string[] = [
  `Kubernetes ${KUBERNETES}, single node, ${new Date().toISOString().slice(0, 10)}`,
];
const started = Date.now();

function note(line: string): void {
  const at = `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
  process.stdout.write(`[${at}] ${line}\n`);
  transcript.push(`# ${line}`);
}

/** Runs a command, shows it and (trimmed) its output in the transcript. */
function show(
  shown: string,
  command: string,
  args: readonly string[],
  options: { input?: string; lines?: number } = {},
): string {
  const output = execFileSync(command, args, {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    input: options.input,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines = output.trimEnd().split('\n');
  const kept = options.lines === undefined ? lines : lines.slice(0, options.lines);
  transcript.push(
    `$ ${shown}`,
    ...kept,
    ...(kept.length < lines.length ? [`… (${lines.length - kept.length} more lines)`] : []),
  );
  process.stdout.write(`$ ${shown}\n${kept.join('\n')}\n`);
  return output;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`e2e:k8s: ${what}`);
}

function engine(): { command: string; global: string[]; tag: string } {
  execFileSync(process.execPath, [join(root, 'infra/image/build.mjs')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return JSON.parse(
    execFileSync(process.execPath, [join(root, 'infra/image/build.mjs'), '--print'], {
      encoding: 'utf8',
    }),
  ) as { command: string; global: string[]; tag: string };
}

function crds(cluster: Cluster): void {
  for (const file of CRDS) cluster.kubectl(['create', '-f', file]);
  show('kubectl wait --for condition=Established crd --all', 'kubectl', [
    '--kubeconfig',
    cluster.kubeconfig,
    'wait',
    '--for',
    'condition=Established',
    'crd',
    '--all',
    '--timeout',
    '60s',
  ]);
}

/** Every CI values file, rendered and admitted by the API server (server-side dry run). */
function admission(cluster: Cluster, helm: string): void {
  cluster.kubectl(['create', 'namespace', 'admission']);
  for (const file of readdirSync(join(chart, 'ci')).sort()) {
    const rendered = execFileSync(
      helm,
      ['template', RELEASE, chart, '--namespace', 'admission', '-f', join(chart, 'ci', file)],
      { encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    // Strimzi's KafkaTopic has no CRD here (Strimzi ships from a registry this machine cannot reach).
    const documents = rendered
      .split(/^---$/m)
      .filter((doc) => /^kind: /m.test(doc) && !/^kind: KafkaTopic$/m.test(doc));
    const skipped = rendered
      .split(/^---$/m)
      .filter((doc) => /^kind: KafkaTopic$/m.test(doc)).length;
    const output = show(
      `helm template ${RELEASE} helm/tidemark -f ci/${file} | kubectl apply --dry-run=server -f -`,
      'kubectl',
      [
        '--kubeconfig',
        cluster.kubeconfig,
        'apply',
        '--dry-run=server',
        '-n',
        'admission',
        '-f',
        '-',
      ],
      { input: documents.join('---\n'), lines: 4 },
    );
    const admitted = output
      .trim()
      .split('\n')
      .filter((line) => / \(server dry run\)$/.test(line)).length;
    check(
      admitted === documents.length,
      `${file}: ${admitted} of ${documents.length} objects admitted`,
    );
    note(
      `ci/${file}: ${admitted} objects admitted${skipped > 0 ? ` (${skipped} KafkaTopic not: no Strimzi CRD)` : ''}`,
    );
  }
  cluster.kubectl(['delete', 'namespace', 'admission', '--wait=false']);
}

/** What the pods said (their last lines) and the namespace's events, for a failure's report. */
function diagnose(cluster: Cluster): void {
  for (const component of ['gateway', 'worker'])
    try {
      const logs = cluster.kubectl([
        'logs',
        '-n',
        NS,
        '-l',
        `app.kubernetes.io/component=${component}`,
        '--prefix',
        '--tail',
        '40',
      ]);
      process.stderr.write(`--- ${component} logs\n${logs}\n`);
    } catch (error) {
      process.stderr.write(`--- ${component} logs: ${(error as Error).message}\n`);
    }
  process.stderr.write(
    `--- events\n${cluster.kubectl(['get', 'events', '-n', NS, '--sort-by', '.lastTimestamp'])}\n`,
  );
}

async function callThroughService(cluster: Cluster, name: string): Promise<TrackedClient> {
  const ip = cluster
    .kubectl([
      'get',
      'service',
      '-n',
      NS,
      `${RELEASE}-tidemark`,
      '-o',
      'jsonpath={.spec.clusterIP}',
    ])
    .trim();
  return TrackedClient.connect(`http://${ip}:80/mcp`, name, 80);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const transcriptFile = args.includes('--transcript')
    ? args[args.indexOf('--transcript') + 1]
    : undefined;
  const helm = helmBinary();
  const image = engine();
  note(`image ${image.tag} (npm run image:build)`);
  const cluster = await startCluster({ kafkaScript: join(root, 'infra/kafka/kafka.sh') });
  // Interrupted: the cluster is stopped all the same (its processes, mounts, bridge, rules).
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      process.stderr.write(`e2e:k8s: ${signal}, stopping the cluster\n`);
      void cluster.stop().finally(() => process.exit(130));
    });
  const kubectl = (shown: string, rest: readonly string[], lines?: number) =>
    show(
      `kubectl ${shown}`,
      'kubectl',
      ['--kubeconfig', cluster.kubeconfig, ...rest],
      lines === undefined ? {} : { lines },
    );
  const helmShow = (shown: string, rest: readonly string[], lines?: number) =>
    show(
      `helm ${shown}`,
      helm,
      [...rest, '--kubeconfig', cluster.kubeconfig],
      lines === undefined ? {} : { lines },
    );
  try {
    note(
      `cluster up: etcd, API server, controller manager, scheduler, kubelet on containerd, kube-proxy, CoreDNS; Kafka at ${cluster.brokers}`,
    );
    kubectl('get nodes -o wide', ['get', 'nodes', '-o', 'wide']);
    cluster.importImage(
      (file) =>
        execFileSync(image.command, [
          ...image.global,
          'save',
          '--format',
          'docker-archive',
          '-o',
          file,
          image.tag,
        ]),
      image.tag,
    );
    const [repository, tag] = [
      image.tag.slice(0, image.tag.lastIndexOf(':')),
      image.tag.slice(image.tag.lastIndexOf(':') + 1),
    ];
    note(`image loaded into the node's containerd: ${image.tag}`);
    crds(cluster);
    admission(cluster, helm);

    const values = [
      '--set',
      `image.repository=${repository}`,
      '--set',
      `image.tag=${tag}`,
      '--set',
      'image.pullPolicy=Never',
      '--set',
      `kafka.brokers=${cluster.brokers}`,
      '--set',
      'topics.partitions=4',
      '--set',
      'topics.replicationFactor=1',
      '--set',
      'auth.mode=none',
      '--set',
      'eventIdSecret.generate=true',
      '--set',
      'metrics.enabled=true',
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.prometheusRule.enabled=true',
      // Two of each, fixed: an HPA without metrics-server (none here) never acts, and a Deployment
      // it owns runs the one replica Kubernetes defaults to. (The HPA objects are admitted above.)
      ...['gateway', 'worker'].flatMap((c) => [
        '--set',
        `${c}.resources.requests.cpu=100m`,
        '--set',
        `${c}.autoscaling.enabled=false`,
        '--set',
        `${c}.replicas=2`,
      ]),
    ];
    helmShow(
      `install ${RELEASE} helm/tidemark -n ${NS} --create-namespace --wait (image ${image.tag}, Kafka ${cluster.brokers}, auth none, metrics on)`,
      [
        'install',
        RELEASE,
        chart,
        '-n',
        NS,
        '--create-namespace',
        '--wait',
        '--timeout',
        '8m',
        ...values,
      ],
    );
    kubectl(`get pods,jobs,services,pdb,networkpolicy,hpa,servicemonitor,prometheusrule -n ${NS}`, [
      'get',
      'pods,jobs,services,pdb,networkpolicy,hpa,servicemonitor,prometheusrule',
      '-n',
      NS,
    ]);
    const ready = cluster.kubectl([
      'get',
      'pods',
      '-n',
      NS,
      '-l',
      `app.kubernetes.io/instance=${RELEASE}`,
      '-o',
      'jsonpath={range .items[*]}{.metadata.labels.app\\.kubernetes\\.io/component} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
    ]);
    check(
      /gateway True/.test(ready) && /worker True/.test(ready) && !/False/.test(ready),
      `pods not all Ready:\n${ready}`,
    );
    const tested = helmShow(`test ${RELEASE} -n ${NS}`, ['test', RELEASE, '-n', NS]);
    check(/Phase:\s+Succeeded/.test(tested), 'helm test did not succeed');

    const client = await callThroughService(cluster, 'e2e-k8s');
    const first = await client.call({ to: 5, delayMs: 20 });
    check(
      first.verdict.outcome === 'exact',
      `a call through the Service: ${JSON.stringify(first.verdict)}`,
    );
    note(`a call through the Service (${RELEASE}-tidemark): ${first.verdict.outcome}`);

    // Both workers deleted while one counts: the pod running the call is surely among them.
    let deleted = false;
    const during = await client.call({
      to: 30,
      delayMs: 200,
      timeoutMs: 240_000,
      onProgress: (value) => {
        if (value !== 5 || deleted) return;
        deleted = true;
        kubectl(`delete pod -n ${NS} -l app.kubernetes.io/component=worker --wait=false`, [
          'delete',
          'pod',
          '-n',
          NS,
          '-l',
          'app.kubernetes.io/component=worker',
          '--wait=false',
        ]);
      },
    });
    check(
      deleted && (during.verdict.outcome === 'exact' || during.verdict.outcome === 'reset'),
      `the call during the workers' deletion: ${JSON.stringify(during.verdict)} ${JSON.stringify(during.seen.slice(-3))}`,
    );
    note(
      `the call during the workers' deletion: ${during.verdict.outcome}, result ${JSON.stringify(during.seen.at(-1))}`,
    );
    await client.close();

    // TIDEMARK_K8S_UPGRADES=N rolls N times (each to a new tag of the same image): a rare failure
    // shows itself in a longer run.
    const rounds = Number(process.env['TIDEMARK_K8S_UPGRADES'] ?? 1);
    // Two clients call throughout, until the last pod of the old image is gone (a gateway drains
    // after helm's --wait returns).
    const outcomes: Array<{ outcome: string; ms: number; detail?: string }> = [];
    let upgrading = true;
    const load = [1, 2].map(async (n) => {
      const caller = await callThroughService(cluster, `e2e-k8s-upgrade-${n}`);
      while (upgrading) {
        // A call whose worker is leaving waits for its partition's next owner (the handoff,
        // worker.handoffTimeout, then the group's rebalance): seconds to tens of seconds.
        const call = await caller.call({ to: 5, delayMs: 100, timeoutMs: 300_000 });
        const ok =
          (call.verdict.outcome === 'exact' || call.verdict.outcome === 'reset') &&
          call.window.endedMs - call.window.startedMs < 60_000;
        outcomes.push({
          outcome: call.verdict.outcome,
          ms: call.window.endedMs - call.window.startedMs,
          ...(ok
            ? {}
            : {
                detail: `${new Date(call.window.startedMs).toISOString()} ${JSON.stringify(call.seen)} transport: ${caller.transportErrors.slice(-5).join(' | ')}`,
              }),
        });
      }
      await caller.close();
    });
    await sleep(2_000);
    let previous = tag;
    for (let round = 1; round <= rounds; round++) {
      const upgraded = rounds === 1 ? 'e2e-upgrade' : `e2e-upgrade-${round}`;
      cluster.tagImage(image.tag, `${repository}:${upgraded}`);
      helmShow(
        `upgrade ${RELEASE} helm/tidemark -n ${NS} --reuse-values --set image.tag=${upgraded} --wait`,
        [
          'upgrade',
          RELEASE,
          chart,
          '-n',
          NS,
          '--reuse-values',
          '--set',
          `image.tag=${upgraded}`,
          '--wait',
          '--timeout',
          '8m',
        ],
        3,
      );
      const images = () =>
        cluster.kubectl([
          'get',
          'pods',
          '-n',
          NS,
          '-o',
          'jsonpath={range .items[*]}{.spec.containers[0].image}{"\\n"}{end}',
        ]);
      for (
        const deadline = Date.now() + 120_000;
        images().includes(`:${previous}\n`) && Date.now() < deadline;
      )
        await sleep(1_000);
      previous = upgraded;
    }
    upgrading = false;
    await Promise.all(load);
    const failed = outcomes.filter(({ outcome }) => outcome !== 'exact' && outcome !== 'reset');
    for (const { detail, ms } of outcomes)
      if (detail !== undefined && ms >= 60_000)
        process.stderr.write(`slow call (${ms} ms): ${detail}\n`);
    const slowest = Math.max(...outcomes.map(({ ms }) => ms));
    note(
      `calls during the upgrade: ${outcomes.length}, ${outcomes.filter((o) => o.outcome === 'exact').length} exact, ${outcomes.filter((o) => o.outcome === 'reset').length} reset, ${failed.length} failed; the slowest took ${(slowest / 1000).toFixed(1)} s (0.5 s of counting)`,
    );
    if (failed.length > 0) diagnose(cluster);
    check(
      outcomes.length > 0 && failed.length === 0,
      `calls failed during the upgrade:\n${failed.map((o) => `${o.outcome}: ${o.detail}`).join('\n')}`,
    );
    kubectl(
      `get pods -n ${NS} -o custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,READY:.status.containerStatuses[0].ready`,
      [
        'get',
        'pods',
        '-n',
        NS,
        '-o',
        'custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,READY:.status.containerStatuses[0].ready',
      ],
    );

    helmShow(`uninstall ${RELEASE} -n ${NS} --wait`, ['uninstall', RELEASE, '-n', NS, '--wait']);
    // Their pods end as they would in any uninstall: each worker hands its calls off first.
    show(
      `kubectl wait --for=delete pods -n ${NS} -l app.kubernetes.io/instance=${RELEASE}`,
      'kubectl',
      [
        '--kubeconfig',
        cluster.kubeconfig,
        'wait',
        '--for=delete',
        'pods',
        '-n',
        NS,
        '-l',
        `app.kubernetes.io/instance=${RELEASE}`,
        '--timeout',
        '120s',
      ],
    );
    const kinds =
      'all,configmaps,secrets,serviceaccounts,roles,rolebindings,networkpolicies,poddisruptionbudgets,servicemonitors,prometheusrules,scaledobjects,jobs';
    const release = ['get', kinds, '-n', NS, '-l', `app.kubernetes.io/instance=${RELEASE}`];
    const left = cluster.kubectl([...release, '-o', 'name']).trim();
    kubectl(`get ${kinds} -n ${NS} -l app.kubernetes.io/instance=${RELEASE}`, release);
    // The generated event-id Secret alone stays, on purpose (helm.sh/resource-policy: keep): ids
    // minted with it keep verifying after a reinstall. Deleting it is the operator's decision.
    check(
      left === `secret/${RELEASE}-tidemark-event-id`,
      `left behind by helm uninstall:\n${left}`,
    );
    kubectl(`delete secret -n ${NS} ${RELEASE}-tidemark-event-id`, [
      'delete',
      'secret',
      '-n',
      NS,
      `${RELEASE}-tidemark-event-id`,
    ]);
    note(`e2e:k8s passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    if (transcriptFile) writeFileSync(transcriptFile, `${transcript.join('\n')}\n`);
    await cluster.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
