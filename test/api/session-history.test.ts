import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
const call = (key: string | null, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

const rows = async (speakerId: string) =>
  (await t.controller.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM speaker_session_changes WHERE speaker_id = ${speakerId}`)[0]!.n;

describe("GET /v1/speakers/{speaker_id}/sessions/history", () => {
  let speakerId: string;
  let nodeKey: string;
  let peerId: string;
  const session = (state: string, bgp_state: string | null) => ({
    protocol: `rl_peer_${peerId.replaceAll("-", "")}`,
    peer_id: peerId,
    neighbor_address: "192.0.2.10",
    remote_asn: 65100,
    state,
    bgp_state,
    since: "2026-11-27 10:00:00",
    routes_imported: 0,
    routes_exported: 0,
    last_error: state === "down" ? "Hold timer expired" : null,
  });
  const report = (sessions: object[]) =>
    call(nodeKey, "POST", `/v1/speakers/${speakerId}/status`, {
      speaker_id: speakerId,
      reason: "sessions_changed",
      error: null,
      bird: { reachable: true, version: "2.0.12" },
      sessions,
      agent_version: "1.0.0",
    });

  it("keeps one row a changed session, none for a report that changes nothing, and answers them in order with the peer's name", async () => {
    const created = await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-h", mode: "remote", router_id: "192.0.2.1", asn: 65010 });
    expect(created.statusCode, created.body).toBe(201);
    speakerId = created.json().id;
    const enrolled = await call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "r1", agent_version: "1.0.0" });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    nodeKey = enrolled.json().api_key;
    const peer = await call(t.rootKey, "POST", "/v1/peers", {
      name: "transit-a",
      neighbor_address: "192.0.2.10",
      remote_asn: 65100,
      speaker_ids: [speakerId],
    });
    expect(peer.statusCode, peer.body).toBe(201);
    peerId = peer.json().id;

    const empty = await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history`);
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json()).toEqual({ items: [], next_cursor: null, has_more: false });

    expect((await report([session("start", "Active")])).statusCode).toBe(204); // appears
    expect(await rows(speakerId)).toBe(1);
    expect((await report([session("up", "Established")])).statusCode).toBe(204); // comes up
    expect(await rows(speakerId)).toBe(2);
    expect((await report([session("up", "Established")])).statusCode).toBe(204); // no change: no row
    expect(await rows(speakerId)).toBe(2);
    expect((await report([session("down", "Active")])).statusCode).toBe(204); // goes down
    expect(await rows(speakerId)).toBe(3);

    const history = await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history`);
    expect(history.statusCode, history.body).toBe(200);
    const items = history.json().items;
    expect(items.map((i: { previous: unknown; current: unknown }) => [i.previous, i.current])).toEqual([
      [null, { state: "start", bgp_state: "Active" }],
      [
        { state: "start", bgp_state: "Active" },
        { state: "up", bgp_state: "Established" },
      ],
      [
        { state: "up", bgp_state: "Established" },
        { state: "down", bgp_state: "Active" },
      ],
    ]);
    expect(items[2]).toMatchObject({ peer_id: peerId, peer_name: "transit-a", neighbor_address: "192.0.2.10", last_error: "Hold timer expired" });
    const times = items.map((i: { at: string }) => Date.parse(i.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);

    // Paged oldest first; `since` narrows the time.
    const first = (await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history?limit=2`)).json();
    expect(first.items.map((i: { id: string }) => i.id)).toEqual([items[0].id, items[1].id]);
    expect(first.has_more).toBe(true);
    const next = (await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history?limit=2&cursor=${first.next_cursor}`)).json();
    expect(next).toMatchObject({ items: [{ id: items[2].id }], has_more: false });
    const later = (await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history?since=${encodeURIComponent(items[2].at)}`)).json();
    expect(later.items.map((i: { id: string }) => i.id)).toEqual([items[2].id]);
  });

  it("a session that goes away is a change with no current state; changes older than 30 days go as new ones are written", async () => {
    const tenantId = (await t.controller.db.sql<{ tenant_id: string }[]>`SELECT tenant_id FROM speakers WHERE id = ${speakerId}`)[0]!.tenant_id;
    const old = new Date(Date.now() - 31 * 86_400_000);
    await t.controller.db.sql`
      INSERT INTO speaker_session_changes (id, tenant_id, speaker_id, at, protocol, state)
      VALUES ('01900000-0000-7000-8000-000000000001', ${tenantId}, ${speakerId}, ${old}, 'rl_old', 'up')`;
    expect(await rows(speakerId)).toBe(4);
    expect((await report([])).statusCode).toBe(204);
    const items = (await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history`)).json().items;
    expect(items).toHaveLength(4);
    expect(items[3]).toMatchObject({ previous: { state: "down" }, current: null });
  });

  it("is the viewer's to read, in the key's tenant only; bad input is a problem, never a 500", async () => {
    const viewer = await call(t.rootKey, "POST", "/v1/api-keys", { name: "v", role: "viewer" });
    expect(viewer.statusCode, viewer.body).toBe(201);
    expect((await call(viewer.json().secret, "GET", `/v1/speakers/${speakerId}/sessions/history`)).statusCode).toBe(200);
    const missing = await call(t.rootKey, "GET", "/v1/speakers/01900000-0000-7000-8000-000000000000/sessions/history");
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["content-type"]).toMatch(/application\/problem\+json/);
    for (const q of ["since=yesterday", "limit=0", "limit=501", "cursor=%21%21", "color=red"]) {
      const bad = await call(t.rootKey, "GET", `/v1/speakers/${speakerId}/sessions/history?${q}`);
      expect(bad.statusCode, q).toBe(400);
      expect(bad.headers["content-type"], q).toMatch(/application\/problem\+json/);
    }
    expect((await call(t.rootKey, "GET", "/v1/speakers/not-a-uuid/sessions/history")).statusCode).toBe(400);
  });

  it("a router's first report with thousands of sessions keeps each, and the history pages through them", async () => {
    const big = (await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-big", mode: "remote", router_id: "192.0.2.2", asn: 65010 })).json();
    const key = (await call(big.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "r2", agent_version: "1.0.0" })).json().api_key;
    const sessions = Array.from({ length: 1800 }, (_, i) => ({ protocol: `p${i}`, state: "up" }));
    const started = performance.now();
    const res = await call(key, "POST", `/v1/speakers/${big.id}/status`, { speaker_id: big.id, reason: "started", sessions });
    expect(res.statusCode, res.body).toBe(204);
    console.log(`a first report of ${sessions.length} sessions recorded in ${Math.round(performance.now() - started)} ms`);
    expect(await rows(big.id)).toBe(1800);
    let cursor = "";
    const seen: string[] = [];
    for (let i = 0; i < 10 && cursor !== null; i++) {
      const page = (await call(t.rootKey, "GET", `/v1/speakers/${big.id}/sessions/history?limit=500${cursor ? `&cursor=${cursor}` : ""}`)).json();
      seen.push(...page.items.map((c: { protocol: string }) => c.protocol));
      cursor = page.next_cursor;
    }
    expect(seen).toEqual(sessions.map((x) => x.protocol));
  });

  it("a deleted speaker's history goes with it", async () => {
    expect(await rows(speakerId)).toBe(4);
    const gone = await t.call(t.rootKey, { method: "DELETE", url: `/v1/speakers/${speakerId}?force=true` });
    expect(gone.statusCode, gone.body).toBe(204);
    expect(await rows(speakerId)).toBe(0);
  });
});
