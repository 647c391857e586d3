import { AppError, ForbiddenError } from "@rlc/shared/errors";
import type { Clock } from "@rlc/shared/time";
import type { FastifyInstance, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import fp from "fastify-plugin";
import type { Sql } from "../db/connect.js";
import type { DatabaseHealth } from "../lib/database-health.js";
import type { Authenticator } from "../services/access/authenticator.js";
import type { Principal, RequestContext } from "../services/access/context.js";
import { type Access, accessOf, refusal } from "./access.js";

/**
 * Resolves the Bearer key before the body is even parsed, then checks the route's role, node,
 * deployment and permission options. The decision rests on the route the router matched, never
 * on how the URL was spelled (the router decodes and normalises, so a test of the raw URL can be
 * walked around), and every matched route needs a key unless it declares itself public.
 */
export default fp(async function authPlugin(
  app: FastifyInstance,
  opts: { sql: Sql; clock: Clock; authenticator: Authenticator; databaseHealth?: DatabaseHealth },
) {
  app.decorateRequest("principal", null);
  app.decorateRequest("now", () => new Date(opts.clock.now()));
  app.decorateRequest("ctx", function ctx(this: FastifyRequest): RequestContext {
    if (!this.principal) throw new Error("ctx() on a route without a principal");
    return { principal: this.principal, requestId: this.id, now: new Date(opts.clock.now()), afterCommit: (fn) => void fn() };
  });

  // Each route's access, worked out on its first request from the route's final `config` (after
  // every onRoute hook had its say) and kept for the next ones.
  const accessByRoute = new WeakMap<object, Access>();

  // A callback hook, not an async one: with the key's row cached the request goes on at once,
  // with no promise and no microtask turn (an async hook costs both on every request).
  app.addHook("onRequest", (req, _reply, done) => {
    // No route matched: the not-found handler answers 404/405 and reveals nothing else.
    if (req.is404) return done();
    // From the route's declared method(s), as the OpenAPI document shows it, never the request's.
    const config = req.routeOptions.config;
    let access = accessByRoute.get(config);
    if (!access) {
      access = accessOf(config, config.method);
      accessByRoute.set(config, access);
    }
    if (access.kind === "public") return done();
    // Every other route needs the database, starting with the key: while it cannot be reached
    // the answer is immediate, not a wait on a connection that will not come.
    if (opts.databaseHealth?.isDown()) {
      return done(new AppError("database_unavailable", "the database cannot be reached; retry shortly", { headers: { "retry-after": "5" } }));
    }
    const principal = opts.authenticator.principalFor(req.headers.authorization, opts.clock.now());
    if (principal instanceof Promise) principal.then((p) => admit(req, access, p, done), done);
    else admit(req, access, principal, done);
  });
});

/** The request goes on with `principal`, or is refused when the route's access does not allow it. */
function admit(req: FastifyRequest, access: Access, principal: Principal, done: HookHandlerDoneFunction) {
  req.principal = principal;
  const refused = refusal(access, principal);
  done(refused ? new ForbiddenError(refused) : undefined);
}
