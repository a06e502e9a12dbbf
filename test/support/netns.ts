// Hosts of a test's own on one machine, for faults of the network (issue #56): each is a Linux
// network namespace with one veth into a bridge the test makes, on a /24 of its own; the test's
// process (the clients) sits on the bridge at `.1`. A cut is iptables DROP inside a host's
// namespace: the peer's packets vanish while both processes keep running — the partition a
// killed process never shows (connections neither close nor refuse; timers must notice).
// Needs root and iproute2/iptables; every name carries the test process's pid, and what a run
// made is deleted at its end (and by the next run, when a run died before its teardown).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

export interface TestHost {
  /** The namespace's name (for `ip netns exec`). */
  readonly ns: string;
  readonly address: string;
}

const PREFIX = 'tmn';

function sh(command: string, args: readonly string[]): void {
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function trySh(command: string, args: readonly string[]): void {
  try {
    sh(command, args);
  } catch {
    // Already gone.
  }
}

/** Deletes what earlier runs made whose process is gone (names carry their pid in base 36). */
function sweep(): void {
  const owner = (name: string) => Number.parseInt(name.slice(PREFIX.length).split('-')[0]!, 36);
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const spaces = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  for (const name of spaces)
    if (name.startsWith(PREFIX) && !alive(owner(name))) trySh('ip', ['netns', 'delete', name]);
  for (const name of readdirSync('/sys/class/net'))
    if (name.startsWith(PREFIX) && !alive(owner(name))) trySh('ip', ['link', 'delete', name]);
}

export class TestNetwork {
  readonly hosts: TestHost[] = [];
  /** The test process's own address on the bridge: where clients come from. */
  readonly gatewayAddress: string;
  private readonly tag = process.pid.toString(36);
  private readonly bridge = `${PREFIX}${this.tag}-br`;
  private readonly subnet: string;

  private constructor() {
    // A /24 per run, from the pid: concurrent runs of this file on one machine do not meet.
    this.subnet = `10.213.${process.pid % 250}`;
    this.gatewayAddress = `${this.subnet}.1`;
  }

  /** Makes the bridge, after deleting what dead runs left; throws naming what is missing. */
  static create(): TestNetwork {
    if (process.getuid?.() !== 0)
      throw new Error('network partition tests need root (network namespaces, iptables)');
    sweep();
    const network = new TestNetwork();
    sh('ip', ['link', 'add', network.bridge, 'type', 'bridge']);
    sh('ip', ['addr', 'add', `${network.gatewayAddress}/24`, 'dev', network.bridge]);
    sh('ip', ['link', 'set', network.bridge, 'up']);
    return network;
  }

  /** A new host on the bridge. */
  host(): TestHost {
    const index = this.hosts.length + 2;
    const ns = `${PREFIX}${this.tag}-${index}`;
    const veth = `${ns}h`;
    const address = `${this.subnet}.${index}`;
    sh('ip', ['netns', 'add', ns]);
    sh('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    sh('ip', ['link', 'set', veth, 'master', this.bridge, 'up']);
    sh('ip', ['-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
    sh('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    const host = { ns, address };
    this.hosts.push(host);
    return host;
  }

  /** The command line that runs `command` on `host`. */
  static on(host: TestHost, command: string, args: readonly string[]): [string, string[]] {
    return ['ip', ['netns', 'exec', host.ns, command, ...args]];
  }

  /** Drops every packet between `host` and `peer` (an address), both ways, inside `host`. */
  cut(host: TestHost, peer: string): void {
    this.rules(host, peer, '-I');
  }

  heal(host: TestHost, peer: string): void {
    this.rules(host, peer, '-D');
  }

  private rules(host: TestHost, peer: string, op: '-I' | '-D'): void {
    sh('ip', ['netns', 'exec', host.ns, 'iptables', op, 'OUTPUT', '-d', peer, '-j', 'DROP']);
    sh('ip', ['netns', 'exec', host.ns, 'iptables', op, 'INPUT', '-s', peer, '-j', 'DROP']);
  }

  /** Deletes the hosts and the bridge (processes still in a namespace keep it until they exit). */
  destroy(): void {
    for (const host of this.hosts.splice(0)) trySh('ip', ['netns', 'delete', host.ns]);
    trySh('ip', ['link', 'delete', this.bridge]);
  }
}
