import type { DeployService } from "../services/deploy/deploy.js";
import type { IngestService } from "../services/ingest/ingest.js";
import type { JobHandler } from "./handler.js";

/**
 * module_ingest: collect, build and store a revision (see IngestService.refresh); then, the
 * revision committed, its prefix sections, so that an apply of it finds them built (about half
 * a second of encoding and hashing for 500k prefixes that the apply's own path no longer has).
 */
export function moduleIngestJob(deps: { ingest: IngestService; deploy: Pick<DeployService, "prepareSections"> }): JobHandler {
  return {
    type: "module_ingest",
    priority: 10,
    lane: "long",
    maxAttempts: 3,
    async run(ctx) {
      const result = await deps.ingest.refresh(ctx);
      if (result.revision_id !== null && !result.unchanged) {
        // The job has ended with its commit: a section that fails here is built by the apply instead.
        await deps.deploy.prepareSections(ctx.job.tenant_id, result.revision_id).catch(() => {});
      }
      return result;
    },
  };
}
