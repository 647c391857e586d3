import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fastifyStatic from "@fastify/static";
import { AppError } from "@rlc/shared/errors";
import type { FastifyInstance, FastifyReply } from "fastify";

/** What Vite names its output: `index-<hash>.js`, `index-<hash>.css`; nothing with a slash. */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The console's built files: `dir` when given, else the dist/ of the @rlc/console package. */
export function consoleDir(dir: string | undefined): string | null {
  if (dir) return dir;
  try {
    return join(dirname(createRequire(import.meta.url).resolve("@rlc/console/package.json")), "dist");
  } catch {
    return null;
  }
}

/**
 * The web console: static files under /console/ and its page at / and every /console/… path
 * (the page routes itself, so a deep link loads the same index.html). Public like /docs — the
 * page holds no data; it asks /v1 with the key the user types. Hidden from the OpenAPI
 * document: these are not API operations. Hashed assets are cached for a year; the page is revalidated every time.
 */
export default async function consolePlugin(app: FastifyInstance, opts: { dir: string }) {
  app.addHook("onRoute", (route) => {
    route.config = { ...(route.config ?? {}), auth: "public" };
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  const assets = join(opts.dir, "assets");
  // sendFile only: a missing asset must answer the API's 404 problem, which the static
  // plugin's own wildcard route would turn into a 405 (its path exists for GET).
  await app.register(fastifyStatic, { root: assets, serve: false });
  app.get<{ Params: { file: string } }>("/console/assets/:file", (req, reply) => {
    const file = req.params.file;
    if (!ASSET_NAME.test(file) || !existsSync(join(assets, file))) throw new AppError("not_found", `no console asset ${file}`);
    return reply.sendFile(file, assets, { immutable: true, maxAge: "365d" });
  });
  const page = (_req: unknown, reply: FastifyReply) => reply.header("cache-control", "no-cache").sendFile("index.html", opts.dir, { cacheControl: false });
  app.get("/", page);
  app.get("/console", (_req, reply) => reply.redirect("/console/", 301));
  app.get("/console/", page);
  app.get("/console/*", page);
}

/** Whether a console build is there to serve (a source checkout before `npm run build` has none). */
export function consoleBuilt(dir: string | null): dir is string {
  return dir !== null && existsSync(join(dir, "index.html"));
}
