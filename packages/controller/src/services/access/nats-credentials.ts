import { eventStreamName, monitoringInboxPrefix } from "@rlc/proto";
import { AppError } from "@rlc/shared/errors";
import { agentPermissions, assertSubjectToken, monitoringPermissions, type NatsCredentialIssuer } from "../../bus/nats-auth.js";
import type { Db } from "../../db/connect.js";
import type { AuditWriter } from "./audit.js";
import type { RequestContext } from "./context.js";

const DAY_MS = 86_400_000;

/**
 * NATS users minted by the controller: one per enrolled agent (its speaker's wake-up subject
 * only) and read-only monitoring users per tenant. Without NATS_ACCOUNT_SEED_FILE the
 * controller mints none (agents then connect as the NATS server lets them, e.g. development).
 */
export function createNatsCredentialService(deps: { issuer: NatsCredentialIssuer | null; audit: AuditWriter }) {
  return {
    /** The agent's `.creds` text, or null when this controller mints no NATS users. */
    async forAgent(tenantId: string, speakerId: string): Promise<{ creds: string; user: string } | null> {
      if (!deps.issuer) return null;
      const name = `agent ${assertSubjectToken(speakerId)}`;
      return deps.issuer.issue(name, agentPermissions(assertSubjectToken(tenantId), speakerId));
    },

    /** A dashboard's credentials: the tenant's events, live and from its stream; publish none; expire after `ttlDays`. */
    async monitoring(tx: Db, ctx: RequestContext, ttlDays: number) {
      if (!deps.issuer) {
        throw new AppError("nats_credentials_unavailable", "this controller mints no NATS credentials (NATS_ACCOUNT_SEED_FILE is not set)");
      }
      const tenantId = assertSubjectToken(ctx.principal.tenantId);
      const expiresAt = new Date(ctx.now.getTime() + ttlDays * DAY_MS);
      const permissions = monitoringPermissions(tenantId);
      const issued = await deps.issuer.issue(`monitoring ${ctx.principal.tenantName}`, permissions, { expiresAt });
      await deps.audit.record(tx, ctx, {
        action: "create",
        resource_type: "nats_user",
        resource_id: issued.user,
        summary: `read-only NATS monitoring user ${issued.user} issued, expires ${expiresAt.toISOString()}`,
      });
      return {
        creds: issued.creds,
        user: issued.user,
        account: deps.issuer.accountId,
        subscribe: permissions.sub?.allow ?? [],
        stream: eventStreamName(tenantId),
        inbox_prefix: monitoringInboxPrefix(tenantId),
        expires_at: expiresAt.toISOString(),
      };
    },
  };
}

export type NatsCredentialService = ReturnType<typeof createNatsCredentialService>;
