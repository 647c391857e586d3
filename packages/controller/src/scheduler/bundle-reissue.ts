import type { Bus } from "../bus/index.js";
import { listBundlesExpiringBefore } from "../db/bundles.js";
import type { Sql } from "../db/connect.js";
import { findSpeakerById, setDesiredRevision, setDispatchStatus } from "../db/speakers.js";
import { type BundleDeps, issueBundle } from "../services/bundles.js";
import { notifySubject } from "../services/speakers.js";
import type { PeriodicTask } from "./scheduler.js";

/** Bundles live 7 days; the desired revision's is signed again once less than this is left. */
export const REISSUE_BEFORE_EXPIRY_MS = 2 * 24 * 3600_000;

/**
 * Re-issues the bundle of every speaker's desired revision that expires within two days: a new
 * sequence and expiry, the same content (so the same digest), and a notification, so that an
 * agent that restarts or reconnects later still finds a bundle it accepts. The speaker's
 * dispatch status is left as it was: an agent already running the revision has nothing to apply
 * and does not report again.
 */
export function bundleReissueTask(deps: BundleDeps & { sql: Sql; bus: Bus }, everyMs = 15 * 60_000): PeriodicTask {
  return {
    name: "bundle_reissue",
    everyMs,
    async run(now) {
      const due = await listBundlesExpiringBefore(deps.sql, new Date(now.getTime() + REISSUE_BEFORE_EXPIRY_MS));
      const failures: unknown[] = [];
      for (const b of due) {
        try {
          const issued = await deps.sql.begin(async (tx) => {
            const speaker = await findSpeakerById(tx, b.tenant_id, b.speaker_id, true);
            // An apply may have moved the speaker on since the list was read: its bundle is new.
            if (!speaker || speaker.desired_revision_id !== b.revision_id) return null;
            const sequence = await setDesiredRevision(tx, speaker.id, b.revision_id, now);
            await setDispatchStatus(tx, speaker.id, speaker.dispatch_status);
            const bundle = await issueBundle(tx, deps, speaker, b.revision_id, sequence, now);
            return { sequence, digest: bundle.digest };
          });
          if (issued) {
            deps.bus.publish(notifySubject(b.tenant_id, b.speaker_id), {
              type: "new_revision",
              speaker_id: b.speaker_id,
              revision_id: b.revision_id,
              digest: issued.digest,
              sequence: issued.sequence,
            });
          }
        } catch (error) {
          failures.push(error); // one speaker's failure does not hold the others back
        }
      }
      if (failures.length) throw new AggregateError(failures, `${failures.length} of ${due.length} bundle re-issue(s) failed`);
    },
  };
}
