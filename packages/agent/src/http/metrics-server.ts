import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { AgentMetrics } from "./metrics.js";

export interface MetricsServer {
  /** The bound address; port 0 in the options gives a free port here. */
  address: AddressInfo;
  close(): Promise<void>;
}

/**
 * The agent's local listener (127.0.0.1 by default): `/metrics` in Prometheus text, `/healthz`
 * as JSON, 200 while BIRD's socket answers and 503 when it does not. Read-only, no auth: it
 * says what any user on the router could ask birdc.
 */
export async function startMetricsServer(metrics: AgentMetrics, listen: { host: string; port: number }): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/metrics") {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(req.method === "HEAD" ? undefined : metrics.render());
      return;
    }
    if (path === "/healthz") {
      const health = metrics.health();
      const body = JSON.stringify({ status: health.ok ? "ok" : "bird_unreachable", ...health });
      res.writeHead(health.ok ? 200 : 503, { "content-type": "application/json" }).end(req.method === "HEAD" ? undefined : body);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
