import { AppError } from "@rlc/shared/errors";
import { Health, Ready, Version } from "@rlc/shared/schemas";
import { readinessChecks } from "../services/operations/readiness.js";
import { problems } from "./responses.js";
import type { RoutePlugin } from "./route-file.js";

/** Liveness, readiness, version: no key needed. */
const publicRoutes: RoutePlugin = async (app, { deps }) => {
  const cfg = { auth: "public" as const };
  const health = async () => ({ status: "ok" as const });
  const version = async () => ({ ...deps.buildInfo, api: "v1" as const, node: process.version });
  // The 400 is a query parameter: these routes read none, and say so rather than ignore one.
  const healthSchema = { tags: ["health"], security: [], response: { 200: Health, ...problems(400) } };
  const versionSchema = { tags: ["health"], security: [], response: { 200: Version, ...problems(400) } };

  app.get("/v1/health", { schema: { ...healthSchema, summary: "Liveness" }, config: cfg }, health);
  app.get("/health", { schema: { ...healthSchema, summary: "Liveness (root)" }, config: cfg }, health);
  app.get("/v1/version", { schema: { ...versionSchema, summary: "Build version" }, config: cfg }, version);
  app.get("/version", { schema: { ...versionSchema, summary: "Build version (root)" }, config: cfg }, version);

  app.get(
    "/v1/ready",
    { schema: { tags: ["health"], summary: "Readiness: database and NATS", security: [], response: { 200: Ready, ...problems(400, 503) } }, config: cfg },
    async () => {
      const checks = await readinessChecks(deps);
      const down = Object.entries(checks)
        .filter(([, v]) => v === "down")
        .map(([k]) => k);
      if (down.length) throw new AppError("not_ready", `dependencies down: ${down.join(", ")}`, { extra: { checks } });
      return { status: "ready" as const, checks };
    },
  );
};

export default publicRoutes;
