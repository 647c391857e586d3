import type { AnyRole } from "@rlc/shared/schemas";
import type { z } from "zod";

export type RoleName = z.infer<typeof AnyRole>;

/** Who is calling: derived from the API key alone (X-Tenant-Id is ignored). */
export interface Principal {
  tenantId: string;
  tenantName: string;
  role: RoleName;
  keyId: string;
  keyPrefix: string;
  speakerId: string | null;
}

/** What a service needs to know about the request it serves. */
export interface RequestContext {
  principal: Principal;
  requestId: string | null;
  now: Date;
  /** Runs after the surrounding transaction commits (wake-ups, notifications); never before. */
  afterCommit(fn: () => void | Promise<void>): void;
}

const rank: Record<RoleName, number> = { node: 0, viewer: 1, operator: 2, admin: 3, superadmin: 4 };

/** viewer < operator < admin < superadmin; `node` stands apart and is below every other role. */
export function roleAtLeast(role: RoleName, minimum: RoleName): boolean {
  if (role === "node" || minimum === "node") return role === minimum;
  return rank[role] >= rank[minimum];
}

export function roleRank(role: RoleName): number {
  return rank[role];
}

/**
 * The tenant made on the first start: it owns the deployment itself (the controller host's log
 * files and routing daemon, the database's maintenance, the other tenants), which no other
 * tenant's key may touch, whatever its role.
 */
export const DEPLOYMENT_TENANT = "default";

export const MONITORING_READ = "bgp:monitoring:read";

/**
 * Whose fleet detail (`GET /v1/metrics`) a key reads: its own tenant's id, or null (every
 * tenant) for a superadmin of the deployment's tenant, who runs the deployment and so its
 * Prometheus.
 */
export function fleetScopeOf(principal: { tenantId: string; tenantName: string; role: RoleName }): string | null {
  return principal.role === "superadmin" && principal.tenantName === DEPLOYMENT_TENANT ? null : principal.tenantId;
}

/**
 * What a key may do, by its role; the deployment's resources (the database's maintenance, the
 * tenants) only in the deployment's own tenant. Without a tenant name: as in that tenant.
 */
export function permissionsOf(role: RoleName, tenantName: string = DEPLOYMENT_TENANT): string[] {
  if (role === "node") return ["bgp:node"];
  const perms = [MONITORING_READ, "bgp:read"];
  if (roleAtLeast(role, "operator")) perms.push("bgp:write", "bgp:keys:manage");
  if (roleAtLeast(role, "admin")) perms.push("bgp:admin", "bgp:signing-keys:rotate");
  if (role === "superadmin" && tenantName === DEPLOYMENT_TENANT) perms.push("bgp:maintenance:db", "bgp:tenants:manage");
  return perms;
}

/** A key of the deployment's own tenant: the only tenant whose keys may act on the deployment itself. */
export function inDeploymentTenant(principal: { tenantName: string }): boolean {
  return principal.tenantName === DEPLOYMENT_TENANT;
}
