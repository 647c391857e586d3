import type { FastifyContextConfig } from "fastify";

/**
 * The `config` that says who may call a route (plugins/access.ts enforces it and the OpenAPI
 * document shows it as `x-min-role`). A route without one takes the default of its method:
 * the viewer role for reads, the operator role for writes.
 */
export const operator: FastifyContextConfig = { role: "operator" };
export const admin: FastifyContextConfig = { role: "admin" };
export const superadmin: FastifyContextConfig = { role: "superadmin" };
/**
 * Acts on the deployment itself (its routing daemon, its database, its tenants): superadmins of
 * the deployment's tenant only; keys of any other tenant get 403, whatever their role.
 */
export const deployment: FastifyContextConfig = { deployment: true };
/** The deployment's runtime-log files, with SPEC.md's roles, and in the deployment's tenant only. */
export const deploymentViewer: FastifyContextConfig = { deployment: true, role: "viewer" };
export const deploymentOperator: FastifyContextConfig = { deployment: true, role: "operator" };
