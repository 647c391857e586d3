import { AppError } from "@rlc/shared/errors";
import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import { findSpeakerById, listAllSpeakers, setDesiredRevision, setDispatchStatus } from "../db/speakers.js";
import { type BundleDeps, issueBundle } from "../services/bundles.js";
import { notifySubject, statusSubject } from "../services/speakers.js";
import type { JobHandler } from "./handler.js";

interface ApplyParams {
  revision_id: number;
  speaker_ids: string[];
  timeout_seconds: number;
  force_confirm?: boolean;
}

type Outcome = { speaker_id: string; status: "applied" | "failed" | "timeout" | "superseded" | "deleted"; error: Record<string, unknown> | null };

/**
 * apply (CONTRACT 6): sets each speaker's desired revision and signs its bundle in one
 * transaction, wakes the agents, then waits for their reports. The desired revision stays in
 * PostgreSQL, so an agent that is offline now applies it when it connects, whatever this job's end.
 */
export function applyJob(deps: BundleDeps & { sql: Sql; bus: Bus }): JobHandler {
  return {
    type: "apply",
    maxAttempts: 1,
    async run(ctx) {
      const tenantId = ctx.job.tenant_id;
      const p = ctx.job.params as unknown as ApplyParams;
      const outcomes = new Map<string, Outcome>();
      const issued = await deps.sql.begin(async (tx) => {
        const out: { speaker_id: string; sequence: number; digest: string }[] = [];
        for (const id of p.speaker_ids) {
          const speaker = await findSpeakerById(tx, tenantId, id, true);
          if (!speaker) {
            outcomes.set(id, { speaker_id: id, status: "deleted", error: null });
            continue;
          }
          const sequence = await setDesiredRevision(tx, id, p.revision_id, ctx.now());
          const bundle = await issueBundle(tx, deps, speaker, p.revision_id, sequence, ctx.now(), { forceConfirm: p.force_confirm === true });
          out.push({ speaker_id: id, sequence, digest: bundle.digest });
        }
        return out;
      });
      for (const b of issued) {
        deps.bus.publish(notifySubject(tenantId, b.speaker_id), { type: "new_revision", speaker_id: b.speaker_id, revision_id: p.revision_id, digest: b.digest, sequence: b.sequence });
        await setDispatchStatus(deps.sql, b.speaker_id, "dispatched");
      }
      await ctx.progress(0, issued.length);

      let wake: (() => void) | null = null;
      const unsubscribe = deps.bus.subscribe(statusSubject(tenantId, "*"), () => wake?.());
      const deadline = Date.now() + p.timeout_seconds * 1000;
      const pending = new Set(issued.map((b) => b.speaker_id));
      // A re-apply of the revision a speaker already runs (a peer change) counts only once the
      // agent reports the new bundle: its sequence, not the revision number, says so.
      const sequenceOf = new Map(issued.map((b) => [b.speaker_id, b.sequence]));
      try {
        while (pending.size) {
          await ctx.checkpoint();
          for (const row of await listAllSpeakers(deps.sql, tenantId)) {
            if (!pending.has(row.id)) continue;
            const error = row.last_error as { revision_id?: number; sequence?: number | null } | null;
            const issuedSequence = sequenceOf.get(row.id)!;
            const appliedSequence = row.applied_sequence === null ? 0 : Number(row.applied_sequence);
            if (row.desired_revision_id !== p.revision_id) outcomes.set(row.id, { speaker_id: row.id, status: "superseded", error: null });
            else if (row.applied_revision_id === p.revision_id && appliedSequence >= issuedSequence) outcomes.set(row.id, { speaker_id: row.id, status: "applied", error: null });
            else if (row.dispatch_status === "failed" && error?.revision_id === p.revision_id && (error.sequence == null || error.sequence >= issuedSequence)) {
              outcomes.set(row.id, { speaker_id: row.id, status: "failed", error: row.last_error });
            }
            else continue;
            pending.delete(row.id);
          }
          await ctx.progress(issued.length - pending.size, issued.length);
          if (!pending.size || Date.now() >= deadline) break;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(500, Math.max(0, deadline - Date.now())));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
      } finally {
        unsubscribe();
      }
      for (const id of pending) {
        outcomes.set(id, { speaker_id: id, status: "timeout", error: { code: "timeout", message: `no report of revision ${p.revision_id} within ${p.timeout_seconds} s` } });
        await setDispatchStatus(deps.sql, id, "failed");
      }
      const speakers = p.speaker_ids.map((id) => outcomes.get(id)!).filter(Boolean);
      const failed = speakers.filter((s) => s.status === "failed" || s.status === "timeout");
      if (failed.length) {
        const detail = failed.map((f) => `${f.speaker_id}: ${(f.error as { code?: string; message?: string } | null)?.code ?? f.status} ${(f.error as { message?: string } | null)?.message ?? ""}`.trim());
        throw new AppError("apply_failed", `revision ${p.revision_id} failed on ${failed.length} speaker(s): ${detail.join("; ")}`, {
          extra: { revision_id: p.revision_id, speakers },
        });
      }
      return { revision_id: p.revision_id, speakers };
    },
  };
}
