import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { TestController } from "../../helpers/controller.js";

/** Calls and expects a status, printing the body when it differs. */
export async function expectStatus(t: TestController, key: string, opts: InjectOptions, status: number): Promise<LightMyRequestResponse> {
  const res = await t.call(key, opts);
  expect(res.statusCode, `${opts.method} ${opts.url}: ${res.body}`).toBe(status);
  return res;
}

export async function createModule(t: TestController, key: string, body: Record<string, unknown>): Promise<any> {
  return (await expectStatus(t, key, { method: "POST", url: "/v1/modules", payload: body }, 201)).json();
}

export async function mintKey(t: TestController, role: string): Promise<string> {
  const res = await expectStatus(t, t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: `${role} key`, role } }, 201);
  return res.json().secret;
}

/** A second tenant and its admin key. */
export async function otherTenant(t: TestController, name: string): Promise<{ id: string; key: string }> {
  const res = await expectStatus(t, t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name } }, 201);
  return { id: res.json().tenant_id, key: res.json().admin_key.secret };
}

export async function auditOf(t: TestController, resourceType: string): Promise<any[]> {
  const res = await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/audit?resource_type=${resourceType}&limit=500` }, 200);
  return res.json().items;
}

export interface FeedServer {
  url: string;
  /** Requests received, as `METHOD path`. */
  requests: string[];
  close(): Promise<void>;
}

export type FeedRoute = { status?: number; type?: string; body: string | Buffer; headers?: Record<string, string> };

/** A local feed server (text and JSON CDN feeds); tests allow it with APP_OUTBOUND_ALLOW_CIDRS=127.0.0.0/8. */
export async function startFeedServer(routes: Record<string, FeedRoute>): Promise<FeedServer> {
  const requests: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url}`);
    const route = routes[req.url ?? "/"];
    if (!route) {
      res.writeHead(404, { "content-type": "text/plain" }).end("no such feed");
      return;
    }
    res.writeHead(route.status ?? 200, { "content-type": route.type ?? "text/plain", ...route.headers }).end(route.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
