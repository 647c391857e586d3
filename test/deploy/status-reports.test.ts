import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordSpeakerReports, type SpeakerReportWrite } from "../../packages/controller/src/db/speakers.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// An apply's agents report within a second or two of one another; the controller writes the
// reports that come together in one statement (services/deploy/node.ts). What each agent and
// the apply job see must be what one statement a report gave.
let t: TestController;
let revisionId: number;
let tenantId: string;
const call = (key: string, method: string, url: string, payload?: unknown) =>
  t.call(key, { method: method as never, url, ...(payload === undefined ? {} : { payload: payload as never }) });

async function enrolledSpeaker(name: string) {
  const created = (await call(t.rootKey, "POST", "/v1/speakers", { name, router_id: "192.0.2.9", asn: 65020 })).json();
  const enrolled = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: `${name}.example`, agent_version: "1.0.0" })).json();
  return { id: created.speaker_id as string, key: enrolled.api_key as string };
}

beforeAll(async () => {
  t = await startTestController();
  const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "reports", type: "IP_RANGES" })).json();
  await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.7.0.0/16" });
  const refreshed = await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
  expect(refreshed.statusCode, refreshed.body).toBe(200);
  revisionId = refreshed.json().result.revision_id;
  tenantId = (await call(t.rootKey, "GET", "/v1/auth/session")).json().tenant_id;
}, 60_000);
afterAll(async () => t?.close());

describe("status reports that come together", () => {
  it("each is recorded on its own speaker and ends the apply; one the database refuses fails alone", async () => {
    const speakers = await Promise.all(Array.from({ length: 6 }, (_, i) => enrolledSpeaker(`burst-${i}`)));
    const apply = await call(t.rootKey, "POST", "/v1/apply", { speaker_ids: speakers.map((s) => s.id), timeout_seconds: 60 });
    expect(apply.statusCode, apply.body).toBe(202);
    const latest = await Promise.all(
      speakers.map((s) =>
        until(`${s.id}'s bundle`, async () => {
          const r = await call(s.key, "GET", `/v1/speakers/${s.id}/revisions/latest`);
          return r.statusCode === 200 ? (r.json() as { sequence: number; digest: string }) : null;
        }),
      ),
    );
    const body = (i: number) => ({
      speaker_id: speakers[i]!.id,
      reason: "applied",
      applied_revision_id: revisionId,
      applied_sequence: latest[i]!.sequence,
      applied_digest: latest[i]!.digest,
      // The last one's date passes the route's check (JavaScript rolls 30 February over) but not PostgreSQL's.
      applied_at: i === 5 ? "2030-02-30T00:00:00Z" : new Date().toISOString(),
      sessions: [],
      error: null,
      agent_version: `1.0.${i}`,
    });
    const answers = await Promise.all(speakers.map((s, i) => call(s.key, "POST", `/v1/speakers/${s.id}/status`, body(i))));
    expect(answers.slice(0, 5).map((a) => a.statusCode)).toEqual([204, 204, 204, 204, 204]);
    expect(answers[5]!.statusCode).toBeGreaterThanOrEqual(500);
    for (const [i, s] of speakers.slice(0, 5).entries()) {
      const row = (await call(t.rootKey, "GET", `/v1/speakers/${s.id}`)).json();
      expect(row).toMatchObject({ agent_version: `1.0.${i}`, dispatch_status: "idle", applied_revision_id: revisionId });
    }
    expect((await call(t.rootKey, "GET", `/v1/speakers/${speakers[5]!.id}`)).json()).toMatchObject({ agent_version: "1.0.0", dispatch_status: "dispatched" });
    // The refused one reports again, well formed: the apply ends with every speaker applied.
    expect(
      (await call(speakers[5]!.key, "POST", `/v1/speakers/${speakers[5]!.id}/status`, { ...body(5), applied_at: new Date().toISOString() })).statusCode,
    ).toBe(204);
    const job = await until("the apply's end", async () => {
      const j = (await call(t.rootKey, "GET", `/v1/jobs/${apply.json().job_id}`)).json();
      return j.status === "awaiting" || j.status === "running" || j.status === "queued" ? null : j;
    });
    expect(job.status).toBe("succeeded");
    expect(job.result.speakers.map((s: { status: string }) => s.status)).toEqual(Array(6).fill("applied"));
  });

  it("one statement records several reports and answers each row as it was, none for a speaker not in the tenant given", async () => {
    const [a, b] = await Promise.all([enrolledSpeaker("one-statement-a"), enrolledSpeaker("one-statement-b")]);
    const sql = t.controller.db.sql;
    const report = (speakerId: string, tenant: string, version: string): SpeakerReportWrite => ({
      tenant_id: tenant,
      speaker_id: speakerId,
      at: new Date(),
      agent_version: version,
      accepts: null,
      applied_revision_id: null,
      applied_sequence: null,
      applied_at: null,
      error: { code: "fetch_failed", message: "x", revision_id: revisionId },
      report: { reason: "apply_failed", mark: version },
      failed_revision_id: null,
    });
    const first = await recordSpeakerReports(sql, [
      report(a.id, tenantId, "2.0.0"),
      report(randomUUID(), tenantId, "2.0.0"),
      report(b.id, randomUUID(), "2.0.0"),
    ]);
    expect(first.map((r) => r?.tenant_id ?? null)).toEqual([tenantId, null, null]);
    const second = await recordSpeakerReports(sql, [report(b.id, tenantId, "3.0.0"), report(a.id, tenantId, "3.0.0")]);
    expect(second.map((r) => (r?.last_report as { mark?: string } | null)?.mark ?? null)).toEqual([null, "2.0.0"]);
    const rows = await sql<{ id: string; agent_version: string; last_error: { code: string } }[]>`
      SELECT id, agent_version, last_error FROM speakers WHERE id IN (${a.id}, ${b.id}) ORDER BY name`;
    expect(rows.map((r) => [r.id, r.agent_version, r.last_error.code])).toEqual([
      [a.id, "3.0.0", "fetch_failed"],
      [b.id, "3.0.0", "fetch_failed"],
    ]);
  });
});
