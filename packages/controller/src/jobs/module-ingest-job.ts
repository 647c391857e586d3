import type { IngestService } from "../services/ingest/ingest.js";
import type { JobHandler } from "./handler.js";

/**
 * module_ingest: collect, build and store a revision (see IngestService.refresh); the revision
 * committer it goes through builds the prefix sections an apply of it will send in the same
 * transaction.
 */
export function moduleIngestJob(deps: { ingest: IngestService }): JobHandler {
  return {
    type: "module_ingest",
    priority: 10,
    lane: "long",
    maxAttempts: 3,
    run(ctx) {
      return deps.ingest.refresh(ctx);
    },
  };
}
