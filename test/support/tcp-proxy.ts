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
  private turn = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(target: number) {
    this.target = target;
    this.server = createServer((client) => {
      const upstream = connect(this.next(), '127.0.0.1');
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
