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
  /**
   * Catches the next request on the one connection whose server side leaves from `port` (what
   * PostgreSQL shows as its `client_port`): from the client's next bytes on, nothing passes either
   * way, the connection stays open, and those bytes are held; null if there is no such connection.
   */
  catchRequest(port: number): CaughtRequest | null;
  /** Connections made through it so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** A request held by `catchRequest`. */
export interface CaughtRequest {
  /** Whether the client has sent it yet. */
  caught(): boolean;
  /** Sends what was held to the server, and what the client sends after; the server's answers still never come back. */
  forward(): void;
  /** Nothing gets through either way from now on, not even a close from the client (a connection gone silent). */
  silence(): void;
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
    catchRequest(port) {
      const pair = [...pairs].find(([, upstream]) => upstream.localPort === port);
      if (!pair) return null;
      const [client, upstream] = pair;
      pairs.delete(pair);
      let mode: "watching" | "holding" | "forwarding" | "silent" = "watching";
      const held: Buffer[] = [];
      client.unpipe(upstream);
      client.on("data", (chunk: Buffer) => {
        if (mode === "forwarding") return void upstream.write(chunk);
        if (mode === "silent") return;
        // Answers stop only now: one to an earlier request has arrived in full, as the client
        // sends its next request only after it.
        if (mode === "watching") {
          upstream.unpipe(client);
          upstream.pause();
          mode = "holding";
        }
        held.push(chunk);
      });
      client.resume();
      return {
        caught: () => mode !== "watching",
        forward() {
          for (const chunk of held.splice(0)) upstream.write(chunk);
          mode = "forwarding";
        },
        silence() {
          mode = "silent";
          client.pause();
        },
      };
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
