import type { IngestService } from "../services/ingest/ingest.js";
import type { JobHandler } from "./handler.js";

/** module_ingest: collect, build and store a revision (see IngestService.refresh). */
export function moduleIngestJob(deps: { ingest: IngestService }): JobHandler {
  return {
    type: "module_ingest",
    priority: 10,
    lane: "long",
    maxAttempts: 3,
    run: (ctx) => deps.ingest.refresh(ctx),
  };
}
