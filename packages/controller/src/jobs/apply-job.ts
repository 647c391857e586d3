import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import { findSpeakerById, setDesiredRevision, setDispatchStatus } from "../db/speakers.js";
import { type BundleDeps, issueBundle } from "../services/bundles.js";
import { notifySubject } from "../services/speakers.js";
import { type ApplyAwaiting, type ApplyParams, evaluateAwaitingApplies } from "./apply-awaiting.js";
import type { JobHandler } from "./handler.js";

/**
 * apply: sets each speaker's desired revision and signs its bundle in one transaction, wakes
 * the agents, and parks the job as `awaiting`: no worker slot waits for the agents. Their
 * reports (apply-awaiting.ts, through the bus) or the scheduler's deadline sweep end it. The
 * desired revision stays in the database, so an agent that is offline now applies it when it
 * connects, whatever this job's end.
 */
export function applyJob(deps: BundleDeps & { sql: Sql; bus: Bus }): JobHandler {
  return {
    type: "apply",
    priority: 5,
    maxAttempts: 1,
    async run(ctx) {
      const tenantId = ctx.job.tenant_id;
      const p = ctx.job.params as unknown as ApplyParams;
      const awaiting: ApplyAwaiting = { revision_id: p.revision_id, timeout_seconds: p.timeout_seconds, issued: [], outcomes: [] };
      await ctx.checkpoint();
      await deps.sql.begin(async (tx) => {
        for (const id of p.speaker_ids) {
          const speaker = await findSpeakerById(tx, tenantId, id, true);
          if (!speaker) {
            awaiting.outcomes.push({ speaker_id: id, status: "deleted", error: null });
            continue;
          }
          const sequence = await setDesiredRevision(tx, id, p.revision_id, ctx.now());
          const bundle = await issueBundle(tx, deps, speaker, p.revision_id, sequence, ctx.now(), { forceConfirm: p.force_confirm === true });
          await setDispatchStatus(tx, id, "dispatched");
          awaiting.issued.push({ speaker_id: id, sequence, digest: bundle.digest });
        }
      });
      for (const b of awaiting.issued) {
        deps.bus.publish(notifySubject(tenantId, b.speaker_id), { type: "new_revision", speaker_id: b.speaker_id, revision_id: p.revision_id, digest: b.digest, sequence: b.sequence });
      }
      const deadline = new Date(ctx.now().getTime() + p.timeout_seconds * 1000);
      await ctx.park({ awaiting, deadline, done: 0, total: awaiting.issued.length });
      // Speakers already on this bundle (a re-push) and reports that came in while issuing.
      await evaluateAwaitingApplies({ sql: deps.sql, bus: deps.bus, now: ctx.now }, { tenantId });
      return undefined;
    },
  };
}
