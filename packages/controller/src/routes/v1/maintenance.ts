import {
  AnalyzeResult,
  CreateMaintenancePolicyBody,
  DatabaseStatus,
  JobAccepted,
  MaintenanceDryRun,
  MaintenancePolicy,
  MaintenancePolicyListQuery,
  MaintenancePolicyParams,
  optionalBody,
  UpdateMaintenancePolicyBody,
} from "@rlc/shared/schemas";
import { z } from "zod";
import { AUDIT_RETENTION_FLOOR_DAYS } from "../../services/operations/maintenance.js";
import { deployment, operator } from "../access.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import { authProblems, jobAccepted, problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const NoBody = optionalBody(z.strictObject({}));

const ACTIONS =
  "Actions: `revision_prune` (by the tenant's `revision_retention_minutes`; never the current revision), " +
  "`runtime_logs_cleanup` (`threshold_bytes` and `mode` default to the tenant's `runtime_logs_auto_*`; only where runtime logs are available; " +
  "the log files are the deployment's, so only keys of tenant `default` may write a policy with it (403 otherwise) and it reports `available: false` in any other tenant), " +
  `\`audit_retention\` (\`days\`; never a record still waiting to be pushed; fewer than ${AUDIT_RETENTION_FLOOR_DAYS} days needs the admin role or higher, ` +
  "an operator gets 403 `forbidden`) and `jobs_retention` (`days`; finished jobs only).";

const maintenanceRoutes = routeFile(["maintenance"], "maintenance", async (app, maintenance, { tags }) => {
  resourceRoutes(
    app,
    resource({
      tags,
      path: "/v1/maintenance/policies",
      id: "policy_id",
      params: MaintenancePolicyParams,
      one: "a maintenance policy",
      many: "maintenance policies",
      item: MaintenancePolicy,
      service: maintenance,
      createdId: "policy_id",
      config: operator,
      list: {
        summary: "List maintenance policies (newest first)",
        description: "The tenant's policies, keyset-paginated; `enabled=true|false` filters.",
        querystring: MaintenancePolicyListQuery,
      },
      create: {
        description: `The scheduler runs an enabled policy every \`interval_minutes\` (5..43200), first one interval after it is created. ${ACTIONS} The name is unique in the tenant (409).`,
        body: CreateMaintenancePolicyBody,
      },
      read: { description: "With `last_run_at` (when a run last finished) and `next_run_at` (when the scheduler runs it next; null while disabled)." },
      update: {
        description: `Enabling a policy or changing its interval schedules its next run one interval from now; disabling clears \`next_run_at\`. \`actions\` replaces the list. ${ACTIONS}`,
        body: UpdateMaintenancePolicyBody,
      },
      remove: { description: "A run already queued then fails with `not_found`." },
    }),
  );

  app.post(
    "/v1/maintenance/policies/:policy_id/run",
    {
      schema: {
        tags,
        summary: "Run a maintenance policy now (a maintenance_policy_run job)",
        description:
          "Enqueues a `maintenance_policy_run` job: 202 with `Location: /v1/jobs/{job_id}`. The run writes an audit record (`action: run`, " +
          "`resource_type: maintenance_policy`, with `policy_id`) and so does each deletion it makes; a disabled policy runs too when asked.",
        params: MaintenancePolicyParams,
        body: NoBody,
        response: { 202: JobAccepted, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        return jobAccepted(await maintenance.requestRun(tx, ctx, req.params.policy_id));
      }),
  );

  app.post(
    "/v1/maintenance/policies/:policy_id/dry-run",
    {
      schema: {
        tags,
        summary: "What a run of the policy would delete now",
        description:
          "Answers at once and deletes nothing. Each action says what it `would` do: `count`, and the ids or files. " +
          "A runtime-log dry run is recorded in the cleanup audit with `dry_run: true`, as every runtime-log dry run is. " +
          "Nothing is changed, so an `Idempotency-Key` is accepted and has no effect.",
        params: MaintenancePolicyParams,
        body: NoBody,
        response: { 200: MaintenanceDryRun, ...writeProblems, ...problems(404) },
      },
      config: operator,
    },
    async (req) => maintenance.dryRun(req.ctx(), req.params.policy_id),
  );

  app.get(
    "/v1/maintenance/db",
    {
      schema: {
        tags,
        summary: "Database size, table sizes, row estimates, dead tuples and connections",
        description:
          "From pg_database_size, pg_class, pg_stat_user_tables and pg_stat_activity of the database the controller uses (shared by every tenant, " +
          "so it is the deployment's: every tenant's tables and row counts). " +
          "Where the statistics views have nothing (a fresh server, the embedded database) the counters are null or zero.",
        response: { 200: DatabaseStatus, ...authProblems },
      },
      config: deployment,
    },
    async (req) => maintenance.databaseStatus(req.ctx()),
  );

  app.post(
    "/v1/maintenance/db/analyze",
    {
      schema: {
        tags,
        summary: "Run ANALYZE on the database",
        description:
          "Refreshes the planner's statistics (and so the row estimates of `GET /v1/maintenance/db`). ANALYZE reads every table of the database, " +
          "so it runs at most once a minute for the whole deployment, whichever controller replica is asked: a call within a minute of the last one " +
          "answers 429 `rate_limited` with `Retry-After` (seconds) and runs nothing.",
        body: NoBody,
        response: { 200: AnalyzeResult, ...writeProblems, ...problems(429) },
      },
      config: deployment,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await maintenance.analyze(tx, ctx) })),
  );
});

export default maintenanceRoutes;
