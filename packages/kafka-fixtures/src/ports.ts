import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The kernel's range for outbound (ephemeral) ports, inclusive. */
export interface PortRange {
  readonly low: number;
  readonly high: number;
}

export interface ReservePortsOptions {
  /** Consecutive ports needed (a Kafka broker uses `port` and `port + 1`). @default 1 */
  count?: number;
  /** The host to check with a bind. @default '127.0.0.1' */
  host?: string;
  /** The ephemeral range to stay out of. @default read from `/proc/sys/net/ipv4/ip_local_port_range` */
  ephemeral?: PortRange;
}

// Linux's default, and what macOS and Windows use (IANA 49152–65535) lies inside this or above it.
const LINUX_DEFAULT: PortRange = { low: 32768, high: 60999 };
const LOWEST = 10_240;

/**
 * Consecutive free loopback ports outside the kernel's ephemeral range, for a server that a test
 * stops and starts again on the same port (a broker, a gateway). A port from `listen(0)` comes
 * from the ephemeral range, where any outbound connection made while the server is down — the
 * clients reconnecting to it — can take it, and the restart fails with "Address already in use".
 * Returns the first port of the block; random within the range, so parallel test files rarely
 * try the same one, and each port is checked with a bind.
 */
export async function reservePorts(options: ReservePortsOptions = {}): Promise<number> {
  const count = options.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > 100) {
    throw new TypeError(`reservePorts: count must be an integer from 1 to 100, got ${count}`);
  }
  const host = options.host ?? '127.0.0.1';
  const candidates = portsOutside(options.ephemeral ?? ephemeralPortRange(), count);
  for (let attempt = 0; attempt < 200; attempt++) {
    const first = pick(candidates);
    const ports = Array.from({ length: count }, (_, i) => first + i);
    if ((await Promise.all(ports.map((port) => isFree(port, host)))).every(Boolean)) return first;
  }
  throw new Error(
    `reservePorts: no ${count} consecutive free ports on ${host} outside the ephemeral range`,
  );
}

/** The kernel's ephemeral port range (Linux); the Linux default where it cannot be read. */
export function ephemeralPortRange(path = '/proc/sys/net/ipv4/ip_local_port_range'): PortRange {
  try {
    const [low, high] = readFileSync(path, 'utf8').trim().split(/\s+/).map(Number);
    if (low !== undefined && high !== undefined && low > 0 && high >= low) return { low, high };
  } catch {
    // Not Linux, or /proc is not mounted.
  }
  return LINUX_DEFAULT;
}

type Spans = Array<readonly [number, number]>;

/** Blocks of `count` ports below and above the ephemeral range, as [first, last-first] spans. */
function portsOutside(range: PortRange, count: number): Spans {
  const spans: Spans = [];
  if (range.low - count > LOWEST) spans.push([LOWEST, range.low - count]);
  if (range.high + 1 <= 65535 - count + 1) spans.push([range.high + 1, 65535 - count + 1]);
  if (spans.length === 0) {
    throw new Error(
      `reservePorts: the ephemeral range ${range.low}-${range.high} leaves no room for test servers`,
    );
  }
  return spans;
}

function pick(spans: Spans): number {
  const sizes = spans.map(([low, high]) => high - low + 1);
  let n = Math.floor(Math.random() * sizes.reduce((a, b) => a + b, 0));
  for (const [i, [low]] of spans.entries()) {
    if (n < sizes[i]!) return low + n;
    n -= sizes[i]!;
  }
  return spans[0]![0];
}

function isFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
