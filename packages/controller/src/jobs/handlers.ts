import type { AppServices } from "../services/create-services.js";
import { applyJob } from "./apply-job.js";
import type { JobHandler } from "./handler.js";
import { maintenancePolicyRunJob } from "./maintenance-policy-run-job.js";
import { moduleIngestJob } from "./module-ingest-job.js";
import { peerReconcileJob } from "./peer-reconcile-job.js";
import { revisionPruneJob } from "./revision-prune-job.js";

export interface JobDeps {
  services: Pick<AppServices, "ingest" | "deploy" | "maintenance">;
}

/** Every job type's handler, one file each: each one call of a service. */
export function createJobHandlers(deps: JobDeps): JobHandler[] {
  return [
    moduleIngestJob(deps.services),
    maintenancePolicyRunJob(deps.services),
    revisionPruneJob(deps.services),
    applyJob(deps.services),
    peerReconcileJob(deps.services),
  ];
}
