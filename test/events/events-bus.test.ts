import { Parser } from "@asyncapi/parser";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { EVENTS, eventSubjects, parseEventSubject } from "@rlc/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// A controller on the shared plain NATS (no credentials) and a subscriber of the tenant's
// events beside it: what a dashboard hears while an operator refreshes and applies.
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
let t: TestController;
let nc: NatsConnection;
let tenantId: string;
const heard: { subject: string; data: any }[] = [];
const call = (key: string, method: string, url: string, payload?: unknown) =>
  t.call(key, { method: method as never, url, ...(payload === undefined ? {} : { payload: payload as never }) });

async function speaker(name: string) {
  const created = (await call(t.rootKey, "POST", "/v1/speakers", { name, router_id: "192.0.2.9", asn: 65020 })).json();
  const enrolled = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: `${name}.example`, agent_version: "1.0.0" })).json();
  return { id: created.speaker_id as string, key: enrolled.api_key as string };
}
const report = (s: { id: string; key: string }, body: Record<string, unknown>) =>
  call(s.key, "POST", `/v1/speakers/${s.id}/status`, { speaker_id: s.id, error: null, agent_version: "1.0.0", ...body });
const session = (protocol: string, state: string, bgp_state: string) => ({ protocol, peer_id: null, neighbor_address: "192.0.2.77", state, bgp_state });
const of = (kind: string) => heard.filter((m) => parseEventSubject(m.subject)?.kind === kind);

/** Each payload parses with the schema of the subject it came on: what the AsyncAPI document promises. */
function expectValid(m: { subject: string; data: unknown }) {
  const parsed = parseEventSubject(m.subject);
  expect(parsed, m.subject).not.toBeNull();
  const result = EVENTS[parsed!.kind].schema.safeParse(m.data);
  expect(result.success, `${m.subject}: ${JSON.stringify(result.error?.issues)}`).toBe(true);
  expect((m.data as { tenant_id: string }).tenant_id).toBe(parsed!.tenantId);
}

beforeAll(async () => {
  t = await startTestController({ env: { NATS_URL: natsUrl } });
  tenantId = (await call(t.rootKey, "GET", "/v1/auth/session")).json().tenant_id;
  nc = await connect({ servers: natsUrl });
  nc.subscribe(eventSubjects.tenant(tenantId), { callback: (err, msg) => void (!err && heard.push({ subject: msg.subject, data: msg.json() })) });
  await nc.flush();
}, 60_000);
afterAll(async () => {
  await nc?.close();
  await t?.close();
});

describe("events on NATS (rl.v1.<tenant>.…)", () => {
  it("a refresh publishes the revision it created and then its job's end, after both committed", async () => {
    const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "events", type: "IP_RANGES" })).json();
    await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.8.0.0/16" });
    const refreshed = await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const { job_id: jobId, result } = refreshed.json();
    await until("job finished event", async () => of("job_finished").find((m) => m.data.job_id === jobId));
    const created = of("revision_created").find((m) => m.data.revision_id === result.revision_id);
    expect(created?.subject).toBe(eventSubjects.revisionCreated(tenantId, result.revision_id));
    expect(created?.data).toMatchObject({ reason: "ingest", prefix_count_v4: 1, prefix_count_v6: 0, rolled_back_from: null });
    // The revision is in the database when its event is heard.
    expect((await call(t.rootKey, "GET", `/v1/revisions/${result.revision_id}`)).statusCode).toBe(200);
    const finished = of("job_finished").find((m) => m.data.job_id === jobId)!;
    expect(finished.data).toMatchObject({ type: "module_ingest", status: "succeeded", error_code: null });
    expect(heard.indexOf(created!)).toBeLessThan(heard.indexOf(finished));

    // A rollback is a new revision too.
    const rolled = await call(t.rootKey, "POST", `/v1/revisions/${result.revision_id}/rollback`);
    expect(rolled.statusCode, rolled.body).toBeLessThan(300);
    const back = await until("rollback event", async () => of("revision_created").find((m) => m.data.reason === "rollback"));
    expect(back.data).toMatchObject({ rolled_back_from: result.revision_id, revision_id: result.revision_id + 1 });
    for (const m of heard) expectValid(m);
  });

  // Applies the revision the refresh above made.
  it("an apply publishes each speaker's outcome (applied, reverted) and the job's end", async () => {
    const [good, bad] = [await speaker("ev-good"), await speaker("ev-bad")];
    const revisionId = (await call(t.rootKey, "GET", "/v1/revisions")).json().items[0].revision_id;
    const applied = await call(t.rootKey, "POST", "/v1/apply", { revision_id: revisionId, speaker_ids: [good.id, bad.id], timeout_seconds: 60 });
    expect(applied.statusCode, applied.body).toBe(202);
    const jobId = applied.json().job_id;
    await until("apply awaiting the agents", async () => (await call(t.rootKey, "GET", `/v1/jobs/${jobId}`)).json().status === "awaiting");
    const latest = (await call(good.key, "GET", `/v1/speakers/${good.id}/revisions/latest`)).json();
    expect(
      (await report(good, { reason: "applied", applied_revision_id: revisionId, applied_sequence: latest.sequence, applied_digest: latest.digest })).statusCode,
    ).toBe(204);
    const badLatest = (await call(bad.key, "GET", `/v1/speakers/${bad.id}/revisions/latest`)).json();
    const reverted = { code: "reverted", message: "session rl_peer_x went down in probation", revision_id: revisionId, sequence: badLatest.sequence };
    expect((await report(bad, { reason: "apply_failed", error: reverted })).statusCode).toBe(204);

    const end = await until("apply job end", async () => of("job_finished").find((m) => m.data.job_id === jobId));
    expect(end.data).toMatchObject({ type: "apply", status: "failed", error_code: "apply_failed" });
    const outcomes = of("apply").filter((m) => m.data.job_id === jobId);
    expect(outcomes.map((m) => [m.subject, m.data.outcome]).sort()).toEqual(
      [
        [eventSubjects.apply(tenantId, good.id), "applied"],
        [eventSubjects.apply(tenantId, bad.id), "reverted"],
      ].sort(),
    );
    expect(outcomes.find((m) => m.data.outcome === "reverted")!.data.error).toMatchObject({ code: "reverted" });
    for (const m of heard) expectValid(m);
  });

  it("a session change is published when a report differs from the previous one, and only then", async () => {
    const s = await speaker("ev-sessions");
    const statusOf = () => heard.filter((m) => m.subject === eventSubjects.status(tenantId, s.id));
    const sessionsOf = () => heard.filter((m) => m.subject === eventSubjects.session(tenantId, s.id));
    await report(s, { reason: "started", sessions: [session("rl_a", "start", "Active"), session("rl_b", "up", "Established")] });
    await until("first status", async () => statusOf().length === 1);
    await until("two sessions appear", async () => sessionsOf().length === 2);
    expect(sessionsOf().map((m) => m.data)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ protocol: "rl_a", previous: null, current: expect.objectContaining({ state: "start", bgp_state: "Active" }) }),
      ]),
    );

    // Same states again: a status event, no session event.
    await report(s, { reason: "live_poll", sessions: [session("rl_a", "start", "Active"), session("rl_b", "up", "Established")] });
    await until("second status", async () => statusOf().length === 2);
    // rl_a comes up, rl_b goes away.
    await report(s, { reason: "sessions_changed", sessions: [session("rl_a", "up", "Established")] });
    await until("third status", async () => statusOf().length === 3);
    await until("two more session events", async () => sessionsOf().length === 4);
    const [up, gone] = [sessionsOf()[2]!.data, sessionsOf()[3]!.data];
    expect(up).toMatchObject({ protocol: "rl_a", previous: { state: "start", bgp_state: "Active" }, current: { state: "up", bgp_state: "Established" } });
    expect(gone).toMatchObject({ protocol: "rl_b", previous: { state: "up" }, current: null, neighbor_address: "192.0.2.77" });
    expect(statusOf()[2]!.data).toMatchObject({ speaker_id: s.id, tenant_id: tenantId, reason: "sessions_changed" });
    for (const m of heard) expectValid(m);
  });

  it("serves an AsyncAPI 3.0 document without a key, and it validates", async () => {
    const res = await t.call(null, { method: "GET", url: "/v1/asyncapi.json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.asyncapi).toBe("3.0.0");
    const { document, diagnostics } = await new Parser().parse(res.body);
    const errors = diagnostics.filter((d) => d.severity === 0);
    expect(errors, JSON.stringify(errors, null, 1)).toEqual([]);
    expect(document).toBeDefined();
    expect(
      document!
        .channels()
        .all()
        .map((c) => c.address())
        .sort(),
    ).toEqual(
      Object.values(EVENTS)
        .map((e) => e.address)
        .sort(),
    );
    // The payload schemas are the zod schemas', with their fields.
    const job = document!
      .components()
      .messages()
      .all()
      .find((m) => m.name() === "job_finished")!;
    expect(Object.keys(job.payload()!.properties() ?? {})).toEqual(expect.arrayContaining(["tenant_id", "job_id", "type", "status", "error_code", "at"]));
  });
});
