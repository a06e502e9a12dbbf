import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy a test can cut: `cut()` destroys every open connection (the client sees its
 * socket close, not a polite abort) and `target` says where new connections go — so a client can
 * be moved from one gateway replica to another mid-stream.
 */
export class TcpProxy {
  target: number;
  /**
   * When set, new connections go round-robin over these ports instead of `target` — a Service in
   * front of several gateways; a gateway leaves the pool before it drains, as endpoints do.
   */
  pool: number[] = [];
  /**
   * The host a port is on (default: loopback): a cluster whose gateways each listen on a network
   * namespace of their own names their addresses here.
   */
  hostOf: (port: number) => string = () => '127.0.0.1';
  /**
   * When set, a connection nothing crossed for this long is closed — a load balancer's idle
   * timeout (nginx's `proxy_read_timeout`): how a client learns that the gateway behind a
   * connection went silent (cut from the network), since a stream that is only quiet never closes.
   */
  idleTimeoutMs: number | undefined;
  private turn = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(target: number) {
    this.target = target;
    this.server = createServer((client) => {
      const port = this.next();
      const upstream = connect(port, this.hostOf(port));
      if (this.idleTimeoutMs !== undefined)
        upstream.setTimeout(this.idleTimeoutMs, () => upstream.destroy());
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  static async start(target: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  }

  private next(): number {
    if (this.pool.length === 0) return this.target;
    return this.pool[this.turn++ % this.pool.length]!;
  }

  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
