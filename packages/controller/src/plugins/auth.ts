import { ForbiddenError } from "@rlc/shared/errors";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import type { Sql } from "../db/connect.js";
import type { Clock } from "../lib/time.js";
import type { Authenticator } from "../services/authenticator.js";
import { permissionsOf, type RequestContext, roleAtLeast } from "../services/context.js";

/**
 * Resolves the Bearer key on every /v1 route that is not public, before the body is even
 * parsed, then checks the route's role, node and permission options (CONTRACT 0).
 */
export default fp(async function authPlugin(app: FastifyInstance, opts: { sql: Sql; clock: Clock; authenticator: Authenticator }) {
  app.decorateRequest("principal", null);
  app.decorateRequest("ctx", function ctx(this: import("fastify").FastifyRequest): RequestContext {
    if (!this.principal) throw new Error("ctx() on a route without a principal");
    return { principal: this.principal, requestId: this.id, now: opts.clock(), afterCommit: (fn) => void fn() };
  });

  app.addHook("onRequest", async (req) => {
    if (req.is404 || !req.url.startsWith("/v1/")) return;
    const cfg = req.routeOptions.config;
    if (cfg.auth === "public") return;
    const principal = await opts.authenticator.authenticate(req.headers.authorization, opts.clock());
    req.principal = principal;
    if (cfg.auth === "any") return;
    if (principal.role === "node") {
      if (!cfg.node) throw new ForbiddenError("node keys reach only the node routes");
      return;
    }
    const minimum = cfg.role ?? (req.method === "GET" || req.method === "HEAD" ? "viewer" : "operator");
    if (minimum !== "node" && !roleAtLeast(principal.role, minimum)) {
      throw new ForbiddenError(`this operation needs the ${minimum} role or higher; the key is ${principal.role}`);
    }
    if (cfg.permission && !permissionsOf(principal.role).includes(cfg.permission)) {
      throw new ForbiddenError(`this operation needs the ${cfg.permission} permission`);
    }
  });
});
