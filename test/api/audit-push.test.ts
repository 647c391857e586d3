import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { freePort } from "../helpers/lab-daemons.mjs";
import { until } from "../helpers/wait.js";

let t: TestController;
let port: number;
let portal: Server | null = null;
const received: { auth: string | undefined; body: any }[] = [];

function startPortal(status = 202) {
  const server = createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      if (req.url === "/api/v1/ingest/audit" && req.method === "POST") received.push({ auth: req.headers.authorization, body: JSON.parse(data) });
      res.writeHead(status).end();
    });
  });
  return new Promise<Server>((r) => server.listen(port, "127.0.0.1", () => r(server)));
}

/** True once `check` holds within `ms`; otherwise what it says at the end. */
function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  return until("the check", async () => check(), ms).then(
    () => true,
    () => check(),
  );
}

beforeAll(async () => {
  port = await freePort();
  t = await startTestController({ env: { AUTH_PORTAL_URL: `http://127.0.0.1:${port}`, AUTH_AUDIT_INGEST_SECRET: "portal-secret" } });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => (portal ? portal.close(r) : r(null)));
});

describe("audit push", () => {
  it("a portal that is down loses nothing and slows no request; records arrive once it is back", async () => {
    const ids: string[] = [];
    // No time bound (the machine may be loaded): the writes answer while the portal is down,
    // and the records wait in the outbox rather than in the requests.
    for (let i = 0; i < 5; i++) {
      const res = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: `pushed-${i}`, role: "viewer" } });
      expect(res.statusCode).toBe(201);
      ids.push(res.json().id);
    }
    // Down for a while: the pusher fails and backs off; every record stays in the outbox.
    await new Promise((r) => setTimeout(r, 2500));
    const [{ n }] = [...(await t.controller.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM audit_outbox`)] as [{ n: number }];
    expect(n).toBe(5);
    const [{ attempts }] = [...(await t.controller.db.sql<{ attempts: number }[]>`SELECT max(attempts)::int AS attempts FROM audit_outbox`)] as [
      { attempts: number },
    ];
    expect(attempts).toBeGreaterThanOrEqual(1);

    portal = await startPortal();
    // Make the backed-off rows due now rather than waiting out the backoff.
    await t.controller.db.sql`UPDATE audit_outbox SET next_attempt_at = now() - interval '1 second'`;
    const delivered = () => new Set(received.map((r) => r.body.record.resource_id));
    expect(await waitFor(() => ids.every((id) => delivered().has(id)), 15_000)).toBe(true);
    for (const r of received) {
      expect(r.auth).toBe("Bearer portal-secret");
      expect(r.body.source_app).toBe("bgp");
      expect(r.body.record).toMatchObject({ action: "create", resource_type: "api_key" });
      expect(JSON.stringify(r.body)).not.toContain("rlk_");
    }
    expect(await waitFor(() => false, 300)).toBe(false);
    const [{ left }] = [...(await t.controller.db.sql<{ left: number }[]>`SELECT count(*)::int AS left FROM audit_outbox`)] as [{ left: number }];
    expect(left).toBe(0);
  });
});
