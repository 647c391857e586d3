import type { Db } from "../db/connect.js";
import type { Principal, RequestContext, RoleName } from "../services/access/context.js";

/** The pool or a transaction: what a service call runs on (routes name it through here, never through db/). */
export type { Db };

/** What a mutation handler returns: the status and body to answer (and store for replays). */
export interface Outcome<T> {
  status: number;
  body: T;
  headers?: Record<string, string>;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * `public`: no key (the only way a route goes without one); `any`: every valid key, node
     * keys included. Default: a role check (see plugins/access.ts).
     */
    auth?: "public" | "any";
    /** Lowest role allowed. Default: viewer for GET/HEAD, operator otherwise. */
    role?: RoleName;
    /** Node keys reach only routes that say so, and only their own speaker's. */
    node?: boolean;
    /** A permission the key's role must hold (e.g. `bgp:monitoring:read`). */
    permission?: string;
    /** Acts on the deployment itself (host files, the local routing daemon, the database, the tenants): keys of the deployment's tenant only, of `role` (default superadmin). */
    deployment?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** The request's context for services (the key's principal; throws on a public route). */
    ctx(): RequestContext;
    /** The request's time on the controller's clock (`ctx().now` where the route has a key; this on a public route). */
    now(): Date;
    /**
     * Runs `fn` in one transaction together with the Idempotency-Key claim and the stored answer,
     * so the change, its audit record, its job and the replayable answer commit or vanish together.
     */
    mutate<T>(reply: import("fastify").FastifyReply, fn: (tx: Db, ctx: RequestContext) => Promise<Outcome<T>>): Promise<T>;
  }
}
