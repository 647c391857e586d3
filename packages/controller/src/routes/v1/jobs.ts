import { Job, JobListQuery, JobParams, page } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["jobs"];

const jobRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const jobs = deps.services.jobs;

  app.get(
    "/v1/jobs",
    { schema: { tags, summary: "List jobs (newest first)", querystring: JobListQuery, response: { 200: page(Job), ...authProblems } } },
    async (req) => jobs.list(deps.sql, req.ctx(), req.query),
  );

  app.get(
    "/v1/jobs/:job_id",
    { schema: { tags, summary: "Read a job", params: JobParams, response: { 200: Job, ...authProblems, ...problems(404) } } },
    async (req) => jobs.get(deps.sql, req.ctx(), req.params.job_id),
  );

  app.post(
    "/v1/jobs/:job_id/cancel",
    {
      schema: {
        tags,
        summary: "Cancel a job",
        description:
          "A queued job, or one `awaiting` its agents, is cancelled at once (an awaiting apply keeps the outcomes it has in `result`); a running one gets `cancel_requested` and stops at its next step, changing nothing; " +
          "a finished one is a 409 whose problem carries the job's own status in `job_status` (`status` is the HTTP status).",
        params: JobParams,
        response: { 200: Job, ...writeProblems, ...problems(404) },
      },
      config: { role: "operator" },
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await jobs.cancel(tx, ctx, req.params.job_id) })),
  );
};

export default jobRoutes;
