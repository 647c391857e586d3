import { Job, JobListQuery, JobParams } from "@rlc/shared/schemas";
import { operator } from "../access.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import { problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const jobRoutes = routeFile(["jobs"], "jobs", async (app, jobs, { tags }) => {
  resourceRoutes(
    app,
    resource({
      tags,
      path: "/v1/jobs",
      id: "job_id",
      params: JobParams,
      one: "a job",
      many: "jobs",
      item: Job,
      service: jobs,
      list: { summary: "List jobs (newest first)", querystring: JobListQuery },
      read: {},
    }),
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
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await jobs.cancel(tx, ctx, req.params.job_id) })),
  );
});

export default jobRoutes;
