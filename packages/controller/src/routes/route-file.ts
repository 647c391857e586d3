import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../app-deps.js";
import type { AppServices } from "../services/create-services.js";

/** A file of routes as `registerRoutes` (table.ts) registers it: a Fastify plugin given the app's deps. */
export type RoutePlugin = FastifyPluginAsyncZod<{ deps: AppDeps }>;

type App = Parameters<RoutePlugin>[0];

/**
 * A file of routes around one service: `register` receives the app, that service (the one its
 * routes call) and the file's `tags` (and the deps, for a route that calls another service).
 *
 *   export default routeFile(["speakers"], "speakers", async (app, speakers, { tags }) => { app.get(…) });
 */
export function routeFile<K extends keyof AppServices>(
  tags: string[],
  service: K,
  register: (app: App, service: AppServices[K], file: { tags: string[]; deps: AppDeps }) => Promise<void>,
): RoutePlugin {
  return async (app, { deps }) => register(app, deps.services[service], { tags, deps });
}
