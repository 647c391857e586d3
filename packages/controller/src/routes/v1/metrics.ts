import { z } from "zod";
import { fleetScopeOf, MONITORING_READ } from "../../services/access/context.js";
import { authProblems } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const metricsRoutes: RoutePlugin = async (app, { deps }) => {
  app.get(
    "/v1/metrics",
    {
      schema: {
        tags: ["metrics"],
        summary: "Prometheus metrics of the key's tenant: jobs, speakers, agents' reports, revisions (permission bgp:monitoring:read)",
        description:
          "Prometheus text exposition format, for a scrape job with `authorization` (a Bearer key): the per-tenant and per-speaker figures the public " +
          "`/metrics` leaves out — `rlc_tenant_info`, `rlc_jobs`, `rlc_jobs_oldest_queued_age_seconds`, `rlc_speakers`, " +
          "`rlc_speaker_last_report_age_seconds`, `rlc_revision_prefixes`, `rlc_revision_latest`, `rlc_modules_refresh_failing` and " +
          "`rlc_ingest_source_failures_total`, label `tenant` being the tenant's id. Only the key's tenant; a superadmin of tenant `default` " +
          "(the deployment's) gets every tenant. Read from the database at scrape time, cached 2 s.",
        response: { 200: { description: "The metrics", content: { "text/plain": { schema: z.string() } } }, ...authProblems },
      },
      config: { permission: MONITORING_READ },
    },
    async (req, reply) => {
      const text = await deps.metrics.fleet.render(fleetScopeOf(req.principal!));
      reply.type(deps.metrics.fleet.contentType);
      return reply.serializer(String).send(text);
    },
  );
};

export default metricsRoutes;
