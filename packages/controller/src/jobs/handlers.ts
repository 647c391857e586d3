import type { AppServices } from "../app.js";
import type { Sql } from "../db/connect.js";
import type { RevisionStore } from "../services/revision-store.js";
import type { AsnSource } from "../sources/asn-source.js";
import type { OutboundClient } from "../sources/outbound.js";
import type { Bus } from "../bus/index.js";
import { applyJob } from "./apply-job.js";
import type { JobHandler } from "./handler.js";
import { peerReconcileJob } from "./peer-reconcile-job.js";
import { maintenancePolicyRunJob } from "./maintenance-policy-run-job.js";
import { moduleIngestJob } from "./module-ingest-job.js";
import { revisionPruneJob } from "./revision-prune-job.js";

export interface JobDeps {
  sql: Sql;
  outbound: OutboundClient;
  asnSource: AsnSource | null;
  revisions: RevisionStore;
  bus: Bus;
  services: Pick<AppServices, "audit" | "revisions" | "maintenance" | "signing" | "secretBox">;
}

/** Every job type's handler, one file each. */
export function createJobHandlers(deps: JobDeps): JobHandler[] {
  return [
    moduleIngestJob(deps),
    maintenancePolicyRunJob(deps.services),
    revisionPruneJob(deps.services),
    applyJob({ sql: deps.sql, bus: deps.bus, signing: deps.services.signing, revisions: deps.revisions, secretBox: deps.services.secretBox }),
    peerReconcileJob({ sql: deps.sql, bus: deps.bus, audit: deps.services.audit }),
  ];
}
