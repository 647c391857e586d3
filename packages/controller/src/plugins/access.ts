import { DEPLOYMENT_TENANT, permissionsOf, type RoleName, roleAtLeast } from "../services/access/context.js";

/** Who may call a route, read from its `config` alone: the auth hook enforces it, the OpenAPI document shows it. */
export type Access =
  | { kind: "public" }
  | { kind: "any" }
  | { kind: "role"; role: Exclude<RoleName, "node">; node: boolean; deployment: boolean; permission: string | undefined };

interface AccessConfig {
  auth?: "public" | "any" | undefined;
  role?: RoleName | undefined;
  node?: boolean | undefined;
  permission?: string | undefined;
  deployment?: boolean | undefined;
}

/**
 * Deny by default: a route without a word about access needs a key of the viewer role (reads)
 * or the operator role (everything else). Deployment routes need a key of the deployment's
 * tenant, of the role they declare (superadmin when they declare none).
 */
export function accessOf(config: AccessConfig | undefined, method: string | string[]): Access {
  const cfg = config ?? {};
  if (cfg.auth === "public") return { kind: "public" };
  if (cfg.auth === "any") return { kind: "any" };
  const reads = (Array.isArray(method) ? method : [method]).every((m) => m === "GET" || m === "HEAD");
  const declared = cfg.role === "node" ? undefined : cfg.role;
  const role = declared ?? (cfg.deployment ? "superadmin" : reads ? "viewer" : "operator");
  return { kind: "role", role, node: cfg.node === true || cfg.role === "node", deployment: cfg.deployment === true, permission: cfg.permission };
}

/** Why a key may not call a route, or null when it may. */
export function refusal(access: Access, principal: { role: RoleName; tenantName: string }): string | null {
  if (access.kind !== "role") return null;
  if (principal.role === "node") return access.node ? null : "node keys reach only the node routes";
  if (!roleAtLeast(principal.role, access.role)) return `this operation needs the ${access.role} role or higher; the key is ${principal.role}`;
  if (access.deployment && principal.tenantName !== DEPLOYMENT_TENANT) {
    return `this operation acts on the whole deployment: only keys of tenant "${DEPLOYMENT_TENANT}" may call it`;
  }
  if (access.permission && !permissionsOf(principal.role, principal.tenantName).includes(access.permission)) {
    return `this operation needs the ${access.permission} permission`;
  }
  return null;
}

/** The OpenAPI extension members of a route: `x-min-role` and, where they apply, `x-node-key` and `x-deployment`. */
export function accessExtensions(access: Access): Record<string, unknown> {
  if (access.kind === "public") return { "x-min-role": "public" };
  if (access.kind === "any") return { "x-min-role": "any", "x-node-key": true };
  return { "x-min-role": access.role, ...(access.node ? { "x-node-key": true } : {}), ...(access.deployment ? { "x-deployment": true } : {}) };
}

/** The same, as a sentence for the operation's description. */
export function accessSentence(access: Access): string {
  if (access.kind === "public") return "Access: no key needed.";
  if (access.kind === "any") return "Access: any valid key, node keys included.";
  const who = access.deployment
    ? `${access.role} role or higher, in tenant \`${DEPLOYMENT_TENANT}\` (the deployment's own tenant) only; keys of every other tenant get 403 \`forbidden\`, whatever their role`
    : `${access.role} role or higher`;
  return `Access: ${who}${access.node ? "; also the node key of the speaker in the path" : ""}.`;
}
