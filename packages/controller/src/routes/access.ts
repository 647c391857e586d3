import type { FastifyContextConfig } from "fastify";

/**
 * The `config` that says who may call a route (plugins/access.ts enforces it and the OpenAPI
 * document shows it as `x-min-role`). A route without one takes the default of its method:
 * the viewer role for reads, the operator role for writes.
 */
export const operator: FastifyContextConfig = { role: "operator" };
export const admin: FastifyContextConfig = { role: "admin" };
export const superadmin: FastifyContextConfig = { role: "superadmin" };
/** Acts on the deployment itself (the controller host's log files, its routing daemon): superadmins of the deployment's tenant only. */
export const deployment: FastifyContextConfig = { deployment: true };
