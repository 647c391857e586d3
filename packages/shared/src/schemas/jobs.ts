import { z } from "zod";
import { listQuery, Timestamp, Uuid } from "./common.js";

export const JobType = z.enum(["module_ingest", "peer_reconcile", "apply", "maintenance_policy_run", "revision_prune", "runtime_logs_cleanup"]);
export const JobStatus = z.enum(["queued", "running", "awaiting", "succeeded", "failed", "cancelled"]).meta({
  description:
    "`queued`: waits for a worker; `running`: a worker runs it; `awaiting`: its work is done and it waits for the outside world " +
    "(an apply for the agents' reports) without holding a worker, until the reports or its deadline end it; then `succeeded`, `failed` or `cancelled`.",
});

export const Job = z
  .object({
    job_id: Uuid,
    type: JobType,
    status: JobStatus,
    cancel_requested: z.boolean(),
    progress: z.object({ done: z.number().int(), total: z.number().int().nullable() }).nullable(),
    params: z.record(z.string(), z.unknown()),
    result: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({
        description:
          "What the job made, per type. `module_ingest`: `revision_id` (null when there is none), `unchanged`, `duration_ms`, " +
          "`timings_ms` (`collect`, `aggregate`, `guard`, `snapshot_write`, `revision_write`, and `sections_write`: the new revision's " +
          "bundle sections, committed with it so that an apply of it only signs), `build` (`full` or `incremental`), `modules` (per collected module: " +
          "`module_id`, `prefix_count`, `sources_ok`, `sources_failed`, `sources_stale`; `as_sets`, each AS-SET entry's expansion " +
          "`{as_set, ok, member_count, error?}`; `rpki`, RPKI origin validation's counts `{valid, invalid, not_found, dropped, available}` " +
          "when the module's `rpki_policy` is not `off`), `warnings` (`{module_id, source, message}`: a failed source, `irr:<as_set>`, " +
          "`rpki` naming up to 20 invalid prefixes with their origin), `rpki` (RpkiStatus of the VRPs, when a module was validated), and `sections_error` only when those " +
          "sections could not be built with the revision (it is kept all the same; its first apply builds them). `apply`: `revision_id` and `speakers`, each speaker's outcome.",
      }),
    error: z.looseObject({ code: z.string(), detail: z.string() }).nullable(),
    attempts: z.number().int(),
    created_at: Timestamp,
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable(),
    created_by: z.string().nullable(),
  })
  .meta({ id: "Job" });

export const JobListQuery = listQuery({
  type: JobType.optional(),
  status: JobStatus.optional(),
});

export const JobParams = z.strictObject({ job_id: Uuid });

export type Job = z.infer<typeof Job>;
export type JobType = z.infer<typeof JobType>;
