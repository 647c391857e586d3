import { eventStreamName, monitoringInboxPrefix } from "@rlc/proto";
import { AppError } from "@rlc/shared/errors";
import { agentPermissions, monitoringPermissions } from "../../bus/nats-accounts.js";
import { assertSubjectToken } from "../../bus/nats-auth.js";
import type { NatsTenantAuthority } from "../../bus/nats-tenants.js";
import type { Db } from "../../db/connect.js";
import type { AuditWriter } from "./audit.js";
import type { RequestContext } from "./context.js";

const DAY_MS = 86_400_000;

/**
 * NATS users minted by the controller, each in its tenant's own NATS account: one per enrolled
 * agent (its speaker's wake-up subject only) and read-only monitoring users. Without the NATS
 * authority (NATS_OPERATOR_SEED_FILE, NATS_SYSTEM_CREDS_FILE) the controller mints none: agents
 * then take their wake-ups over gRPC and their HTTP poll.
 */
export function createNatsCredentialService(deps: { authority: NatsTenantAuthority | null; audit: AuditWriter }) {
  return {
    /** The agent's `.creds` text, or null when this controller mints no NATS users. */
    async forAgent(tenantId: string, speakerId: string): Promise<{ creds: string; user: string } | null> {
      if (!deps.authority) return null;
      const name = `agent ${assertSubjectToken(speakerId)}`;
      return deps.authority.issue(assertSubjectToken(tenantId), name, agentPermissions(tenantId, speakerId));
    },

    /** A dashboard's credentials: the tenant's events, live and from its stream; publish none; expire after `ttlDays`. */
    async monitoring(tx: Db, ctx: RequestContext, ttlDays: number) {
      if (!deps.authority) {
        throw new AppError(
          "nats_credentials_unavailable",
          "this controller mints no NATS credentials (NATS_OPERATOR_SEED_FILE and NATS_SYSTEM_CREDS_FILE are not set)",
        );
      }
      const tenantId = assertSubjectToken(ctx.principal.tenantId);
      const expiresAt = new Date(ctx.now.getTime() + ttlDays * DAY_MS);
      const permissions = monitoringPermissions(tenantId);
      const issued = await deps.authority.issue(tenantId, `monitoring ${ctx.principal.tenantName}`, permissions, { expiresAt });
      await deps.audit.record(tx, ctx, {
        action: "create",
        resource_type: "nats_user",
        resource_id: issued.user,
        summary: `read-only NATS monitoring user ${issued.user} issued, expires ${expiresAt.toISOString()}`,
      });
      return {
        creds: issued.creds,
        user: issued.user,
        account: issued.account,
        subscribe: permissions.sub?.allow ?? [],
        stream: eventStreamName(tenantId),
        inbox_prefix: monitoringInboxPrefix(tenantId),
        expires_at: expiresAt.toISOString(),
      };
    },
  };
}

export type NatsCredentialService = ReturnType<typeof createNatsCredentialService>;
