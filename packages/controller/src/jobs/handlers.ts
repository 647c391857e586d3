import type { Sql } from "../db/connect.js";
import type { RevisionStore } from "../services/revision-store.js";
import type { AsnSource } from "../sources/asn-source.js";
import type { OutboundClient } from "../sources/outbound.js";
import type { JobHandler } from "./handler.js";
import { moduleIngestJob } from "./module-ingest-job.js";

export interface JobDeps {
  sql: Sql;
  outbound: OutboundClient;
  asnSource: AsnSource | null;
  revisions: RevisionStore;
}

/** Every job type's handler, one file each. */
export function createJobHandlers(deps: JobDeps): JobHandler[] {
  return [moduleIngestJob(deps)];
}
