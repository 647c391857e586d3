import { ValidationError } from "@rlc/shared/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import fp from "fastify-plugin";

/**
 * What a request may carry, checked in one place rather than route by route:
 *
 * - Query parameters: a route that declares a `querystring` schema validates it strictly (the
 *   schemas are strict objects); a /v1 route that declares none accepts no query parameter at
 *   all, so `POST /v1/modules?dry=true` is a 400 `validation_failed` instead of a module made
 *   by someone who thought they asked for a dry run. The unversioned probes (`/health`,
 *   `/version`, `/metrics`) read no parameter either, and answer the same 400 to one.
 * - Bodies: only the media types a route parses. Fastify's built-in `text/plain` parser would
 *   hand a string to a JSON schema and answer 400; without it a wrong Content-Type is the 415
 *   `unsupported_media_type` it is (the CSV import registers its own types).
 */
const PROBES = new Set(["/health", "/version", "/metrics"]);

export default fp(async function strictRequestsPlugin(app: FastifyInstance) {
  app.removeContentTypeParser("text/plain");

  // A callback hook, not an async one: it runs on most /v1 requests, and an async hook costs a
  // promise and a microtask turn each time.
  const rejectQuery = (req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const names = Object.keys((req.query ?? {}) as Record<string, unknown>);
    if (!names.length) return done();
    done(
      new ValidationError(
        `unknown query parameter(s): ${names.join(", ")}`,
        names.map((n) => ({ path: `query.${n}`, message: "unknown parameter" })),
      ),
    );
  };

  app.addHook("onRoute", (route) => {
    if (!(route.url.startsWith("/v1/") || PROBES.has(route.url)) || route.schema?.querystring) return;
    const existing = route.preValidation ? (Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]) : [];
    route.preValidation = [rejectQuery, ...existing] as typeof route.preValidation;
  });
});
