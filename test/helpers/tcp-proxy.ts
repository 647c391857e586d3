import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy in front of a real server that the test can cut: while `down`, every connection
 * through it is reset and new ones are reset at once (what a failover, a dead proxy or a
 * partition looks like to the client); `up` lets them through again.
 */
export interface TcpProxy {
  port: number;
  down(): void;
  up(): void;
  /** Every connection open now stops carrying bytes either way but stays open (a stalled connection: nothing refused, nothing coming); new ones pass. */
  stall(): void;
  /** Connections made through it so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let cut = false;
  let connections = 0;
  const open = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    if (cut) return void client.resetAndDestroy();
    connections++;
    const upstream = createConnection(target);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    open.add(client);
    open.add(upstream);
    const drop = () => {
      pairs.delete(pair);
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    down() {
      cut = true;
      for (const s of open) s.resetAndDestroy();
      open.clear();
    },
    up() {
      cut = false;
    },
    stall() {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
      pairs.clear();
    },
    get connections() {
      return connections;
    },
    async close() {
      cut = true;
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
