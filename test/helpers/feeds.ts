import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real local HTTP server standing in for the public feeds the controller reads: CDN lists
 * (text or JSON) and RIPEstat's announced-prefixes API. Tests change `routes` between refreshes.
 */
export async function startFeedServer() {
  const routes = new Map<string, { status?: number; type?: string; body: string } | "hang">();
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const url = req.url ?? "/";
    hits.set(url, (hits.get(url) ?? 0) + 1);
    const route = routes.get(url);
    if (route === "hang") return; // never answers: a feed that stalls
    if (!route) return res.writeHead(404).end("no such feed");
    res.writeHead(route.status ?? 200, { "content-type": route.type ?? "text/plain" }).end(route.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    routes,
    hits,
    text(path: string, lines: string[]) {
      routes.set(path, { body: `${lines.join("\n")}\n` });
    },
    json(path: string, value: unknown) {
      routes.set(path, { type: "application/json", body: JSON.stringify(value) });
    },
    ripestat(asn: number, prefixes: string[]) {
      routes.set(`/data/announced-prefixes/data.json?resource=AS${asn}`, {
        type: "application/json",
        body: JSON.stringify({ status: "ok", data: { resource: String(asn), prefixes: prefixes.map((prefix) => ({ prefix, timelines: [] })) } }),
      });
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
