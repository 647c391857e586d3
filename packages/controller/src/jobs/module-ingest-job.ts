import type { DeployService } from "../services/deploy/deploy.js";
import type { IngestService } from "../services/ingest/ingest.js";
import type { JobHandler } from "./handler.js";

/**
 * module_ingest: collect, build and store a revision (see IngestService.refresh), with the prefix
 * sections an apply of it will send (its full section and the deltas from the revisions the
 * speakers run) committed in the same transaction: when the refresh answers, an apply of its
 * revision only signs each speaker's head (about half a second of encoding, hashing and storing
 * for 500k prefixes that the apply's own path no longer has).
 */
export function moduleIngestJob(deps: { ingest: IngestService; deploy: Pick<DeployService, "prepareSections"> }): JobHandler {
  return {
    type: "module_ingest",
    priority: 10,
    lane: "long",
    maxAttempts: 3,
    run(ctx) {
      return deps.ingest.refresh(ctx, { prepare: (tx, revisionId) => deps.deploy.prepareSections(tx, ctx.job.tenant_id, revisionId) });
    },
  };
}
