import { Settings, SettingsPatch } from "@rlc/shared/schemas";
import { operator } from "../access.js";
import { authProblems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const settingsRoutes = routeFile(["settings"], "settings", async (app, settings, { tags }) => {
  app.get("/v1/settings", { schema: { tags, summary: "The tenant's settings", response: { 200: Settings, ...authProblems } } }, async (req) =>
    settings.get(req.ctx()),
  );

  app.patch(
    "/v1/settings",
    {
      schema: {
        tags,
        summary: "Change settings with a JSON merge patch",
        description:
          "RFC 7396: `null` deletes a key, objects merge. `application/merge-patch+json` and `application/json` are accepted. " +
          "Known keys (`BIRD`, `revision_retention_minutes`, `revision_guard_max_drop_percent`, `source_max_stale_hours`, `runtime_logs_auto_*`) are validated; other keys are kept as given. " +
          "`runtime_logs_auto_*` act on the deployment's log files: only keys of tenant `default` may set them; keys of any other tenant get 403 `forbidden`. " +
          "The document after the patch may take at most 1 MiB as JSON, and its keys the controller does not know at most 64 KiB of it: a patch past " +
          "either cap answers 413 `payload_too_large` (with `size_bytes` and `unknown_keys_bytes`) and changes nothing.",
        body: SettingsPatch,
        response: { 200: Settings, ...writeProblems },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await settings.patch(tx, ctx, req.body) })),
  );
});

export default settingsRoutes;
