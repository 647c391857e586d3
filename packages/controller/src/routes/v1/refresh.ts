import { NotFoundError } from "@rlc/shared/errors";
import { Job, JobAccepted, RefreshBody, RefreshQuery } from "@rlc/shared/schemas";
import { Uuid } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { AppDeps } from "../../app.js";
import { moduleExists } from "../../db/ingest-inputs.js";
import { enqueueJob, jobFailure, toJob, waitForJob } from "../../services/jobs.js";
import { problems, writeProblems } from "../responses.js";

const tags = ["refresh"];
const ModuleParams = z.strictObject({ module_id: Uuid });
const WAIT_MS = 60_000;

const refreshRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const describe =
    "Enqueues a module_ingest job (202 with Location). `?wait=true` waits up to 60 s: 200 with the job when it succeeded, " +
    "its problem (with `job_id`) when it failed — 422 `revision_guard_tripped` when the refresh would withdraw too much, 409 when cancelled — " +
    "or 202 when still running. `force: true` skips the mass-withdrawal guard.";
  const schema = {
    tags,
    description: describe,
    body: RefreshBody,
    querystring: RefreshQuery,
    response: { 200: Job, 202: JobAccepted, ...writeProblems, ...problems(404, 429) },
  };

  const refresh = async (req: any, reply: any, moduleIds: string[] | null) => {
    const accepted = await req.mutate(reply, async (tx: any, ctx: any) => {
      if (moduleIds && !(await moduleExists(tx, ctx.principal.tenantId, moduleIds[0]!))) throw new NotFoundError("module", moduleIds[0]);
      const job = await enqueueJob(tx, deps.bus, {
        tenantId: ctx.principal.tenantId,
        type: "module_ingest",
        params: { module_ids: moduleIds, force: req.body.force ?? false },
        createdBy: `key:${ctx.principal.keyPrefix}`,
        now: ctx.now,
        afterCommit: ctx.afterCommit,
      });
      return { status: 202, body: { job_id: job.id, type: job.type, status: job.status }, headers: { location: `/v1/jobs/${job.id}` } };
    });
    if (!req.query.wait) return accepted;
    const row = await waitForJob(deps.sql, deps.bus, req.principal.tenantId, accepted.job_id, WAIT_MS);
    if (row.status === "succeeded") {
      reply.code(200);
      return toJob(row);
    }
    if (row.status === "failed" || row.status === "cancelled") throw jobFailure(row);
    reply.code(202);
    return { job_id: row.id, type: row.type, status: row.status };
  };

  app.post(
    "/v1/modules/:module_id/refresh",
    { schema: { ...schema, summary: "Refresh a module: collect it afresh and build a revision of all enabled modules", params: ModuleParams }, config: { role: "operator" } },
    async (req, reply) => refresh(req, reply, [req.params.module_id]),
  );

  app.post(
    "/v1/modules/refresh",
    { schema: { ...schema, summary: "Refresh every enabled module in one job" }, config: { role: "operator" } },
    async (req, reply) => refresh(req, reply, null),
  );
};

export default refreshRoutes;
