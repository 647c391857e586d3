import { BgpSessionLive, Uuid } from "@rlc/shared/schemas";
import { z } from "zod";
import { deployment } from "../access.js";
import { authProblems, problems, unavailable, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const BirdInfo = z
  .object({
    reachable: z.boolean(),
    version: z.string().nullable(),
    router_id: z.string().nullable(),
    server_time: z.string().nullable(),
    last_reconfiguration: z.string().nullable(),
  })
  .meta({ id: "LocalBirdInfo" });

const LocalBirdStatus = z
  .object({
    speaker_id: Uuid.nullable().describe("The tenant's speaker with `mode: local`; null when it has none."),
    desired_revision_id: z.number().int().nullable(),
    applied_revision_id: z.number().int().nullable(),
    bird: BirdInfo,
    sessions: z.array(BgpSessionLive),
  })
  .meta({ id: "LocalBirdStatus" });

const LocalBirdReload = z
  .object({
    speaker_id: Uuid,
    revision_id: z.number().int(),
    sequence: z.number().int(),
    digest: z.string(),
    applied_at: z.string(),
    files: z.array(z.string()).describe("The files written beside BIRD_CONFIG_PATH."),
    bird: BirdInfo,
    sessions: z.array(BgpSessionLive),
  })
  .meta({ id: "LocalBirdReload" });

const ReloadBody = z.preprocess(
  (v) => (v === null || v === undefined ? {} : v),
  z.strictObject({
    revision_id: z.number().int().min(1).max(2147483647).optional().describe("Default: the local speaker's desired revision, else the current one."),
  }),
);

const birdRoutes = routeFile(["bird"], "localBird", async (app, local, { tags }) => {
  app.get(
    "/v1/bird/status",
    {
      schema: {
        tags,
        summary: "Status of the local routing daemon (BIRD on the controller's host) and its BGP sessions",
        description: "503 `bird_unavailable` when BIRD_CONTROL_SOCKET is not set or the control socket does not answer.",
        response: { 200: LocalBirdStatus, ...authProblems, ...unavailable },
      },
      config: deployment,
    },
    async (req) => local.status(req.ctx()),
  );

  app.post(
    "/v1/bird/reload",
    {
      schema: {
        tags,
        summary: "Reload the local routing daemon with a revision for the tenant's local speaker",
        description:
          "Issues the revision's bundle for the `mode: local` speaker (it becomes its desired revision), renders it with the agent's renderer into " +
          "BIRD_CONFIG_PATH, checks it with `bird -p`, loads it with `configure timeout`, checks the BGP protocols and confirms; the outcome is the " +
          "speaker's status report, so a waiting apply job sees it. 502 `apply_failed` with BIRD's message when BIRD refuses the config (the running " +
          "config is kept); 409 without a local speaker or a revision; 503 `bird_unavailable` when no local BIRD is configured or it does not answer.",
        body: ReloadBody,
        response: { 200: LocalBirdReload, ...writeProblems, ...problems(404, 502), ...unavailable },
      },
      config: deployment,
    },
    async (req) => local.reload(req.ctx(), req.body),
  );
});

export default birdRoutes;
