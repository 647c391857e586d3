import { Job, JobAccepted, RefreshBody, RefreshQuery, RpkiDryRun, Uuid } from "@rlc/shared/schemas";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { operator } from "../access.js";
import { jobAccepted, problems, writeProblems } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const tags = ["refresh"];
const ModuleParams = z.strictObject({ module_id: Uuid });
const WAIT_MS = 60_000;

const refreshRoutes: RoutePlugin = async (app, { deps }) => {
  const describe =
    "Enqueues a module_ingest job (202 with Location). `?wait=true` waits up to 60 s: 200 with the job when it succeeded, " +
    "its problem (with `job_id`) when it failed — 422 `revision_guard_tripped` when the refresh would withdraw too much, 409 when cancelled — " +
    "or 202 when still running. `force: true` skips the mass-withdrawal guard. " +
    "`dry_run: true` enqueues nothing and answers 200 with what RPKI origin validation of the current snapshot finds and what `rpki_policy: drop_invalid` would drop.";
  const schema = {
    tags,
    description: describe,
    body: RefreshBody,
    querystring: RefreshQuery,
    response: { 200: z.union([Job, RpkiDryRun]), 202: JobAccepted, ...writeProblems, ...problems(404, 429) },
  };

  type RefreshRequest = Pick<FastifyRequest, "mutate" | "ctx"> & { body: z.output<typeof RefreshBody>; query: z.output<typeof RefreshQuery> };
  const refresh = async (req: RefreshRequest, reply: FastifyReply, moduleIds: string[] | null) => {
    const accepted = await req.mutate(reply, async (tx, ctx) =>
      jobAccepted(await deps.services.ingest.requestRefresh(tx, ctx, moduleIds, req.body.force ?? false)),
    );
    if (!req.query.wait) return accepted;
    const job = await deps.services.jobs.waitFor(req.ctx().principal.tenantId, accepted.job_id, WAIT_MS);
    if (job.status === "succeeded") {
      reply.code(200);
      return job;
    }
    reply.code(202);
    return { job_id: job.job_id, type: job.type, status: job.status };
  };

  app.post(
    "/v1/modules/:module_id/refresh",
    {
      schema: { ...schema, summary: "Refresh a module: collect it afresh and build a revision of all enabled modules", params: ModuleParams },
      config: operator,
    },
    async (req, reply) =>
      req.body?.dry_run ? deps.services.rpkiDryRun.run(req.ctx().principal.tenantId, req.params.module_id) : refresh(req, reply, [req.params.module_id]),
  );

  app.post("/v1/modules/refresh", { schema: { ...schema, summary: "Refresh every enabled module in one job" }, config: operator }, async (req, reply) =>
    req.body?.dry_run ? deps.services.rpkiDryRun.run(req.ctx().principal.tenantId, null) : refresh(req, reply, null),
  );
};

export default refreshRoutes;
