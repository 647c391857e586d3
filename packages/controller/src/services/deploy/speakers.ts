import { createHash, randomBytes } from "node:crypto";
import { isOldAgent } from "@rlc/shared/bundle";
import { ConflictError, ForbiddenError, NotFoundError } from "@rlc/shared/errors";
import type { Bus } from "../../bus/index.js";
import { countLiveNodeKeys, revokeApiKeysBySpeaker } from "../../db/api-keys.js";
import type { Db } from "../../db/connect.js";
import { insertEnrollmentToken } from "../../db/enrollment.js";
import { listPeerNamesOfSpeaker } from "../../db/peers.js";
import { deleteSpeaker, findSpeakerById, findSpeakerByName, insertSpeaker, listSpeakers, type SpeakerRow, updateSpeaker } from "../../db/speakers.js";
import { loadBuildInfo } from "../../lib/build-info.js";
import { toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { syncStatusOf } from "../../lib/speaker-sync.js";
import { iso, isoRequired } from "../../lib/time.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import { type RequestContext, roleAtLeast } from "../access/context.js";

export const ENROLLMENT_TTL_MS = 24 * 3600_000;

export const hashToken = (token: string) => createHash("sha256").update(token).digest();

/**
 * An enrollment token becomes a node key: the speaker's identity, which receives the signed
 * bundles with the peers' passwords in them. Handing one out is the admin role's, so no chain of
 * operator calls (make a speaker, enroll it, add it to an admin's peer) reaches a password.
 */
export const ENROLLMENT_ROLE = "admin";
const mayEnroll = (ctx: RequestContext) => roleAtLeast(ctx.principal.role, ENROLLMENT_ROLE);

type Session = { protocol: string; peer_id?: string | null; bgp_state?: string | null; [k: string]: unknown };

/** The sessions of a speaker's last report, as the agent sent them. */
export function reportedSessions(row: SpeakerRow): Session[] {
  const sessions = (row.last_report as { sessions?: Session[] } | null)?.sessions;
  return Array.isArray(sessions) ? sessions : [];
}

// The rule lives in lib/ so that the fleet gauges (metrics/, below the services) apply it too.
export { syncStatusOf };

/** `major.minor.patch` of a version (`1.4.0-dev.3+gabc1234` → [1, 4, 0]); null when it is none. */
function coreOf(version: string | null): [number, number, number] | null {
  const m = version ? /^v?(\d+)\.(\d+)\.(\d+)/.exec(version) : null;
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** Whether `agent` is of an older release than `controller` (by major.minor.patch; builds between two tags compare as their tag). */
export function olderRelease(agent: string | null, controller: string): boolean {
  const a = coreOf(agent);
  const c = coreOf(controller);
  if (!a || !c) return false;
  for (let i = 0; i < 3; i++) if (a[i] !== c[i]) return a[i]! < c[i]!;
  return false;
}

/** This controller's version (`git describe`, see lib/build-info.ts), read once. */
let controllerVersion: string | null = null;
const ownVersion = () => (controllerVersion ??= loadBuildInfo().version);

/**
 * What an operator should know of the speaker's agent: `agent_outdated` when it announced no
 * rl-bundle/2 at its last contact (an agent of the release before announcements): it is served
 * rl-bundle/1 and none of the features it did not announce; `agent_older` when its version is
 * of an older release than this controller's.
 */
export function speakerWarnings(
  row: Pick<SpeakerRow, "mode" | "last_seen_at" | "agent_accepts" | "agent_version">,
  controller: string = ownVersion(),
): { code: string; message: string }[] {
  if (row.mode !== "remote" || row.last_seen_at === null) return [];
  const warnings: { code: string; message: string }[] = [];
  if (isOldAgent(row.agent_accepts)) {
    warnings.push({
      code: "agent_outdated",
      message:
        `the agent (${row.agent_version ?? "version unknown"}) accepts ${row.agent_accepts ? row.agent_accepts.bundle_formats.join(", ") : "rl-bundle/1 only (it announces nothing)"}: ` +
        "it is served rl-bundle/1, without deltas or force_confirm; upgrade it",
    });
  }
  if (olderRelease(row.agent_version, controller)) {
    warnings.push({ code: "agent_older", message: `the agent runs ${row.agent_version}, older than this controller's ${controller}` });
  }
  return warnings;
}

export function toSpeaker(row: SpeakerRow) {
  return {
    speaker_id: row.id,
    id: row.id,
    name: row.name,
    mode: row.mode,
    hostname: row.hostname,
    router_id: row.router_id,
    asn: Number(row.asn),
    policies_json: row.policies_json,
    metadata: row.metadata,
    enrolled_at: iso(row.enrolled_at),
    last_seen_at: iso(row.last_seen_at),
    agent_version: row.agent_version,
    agent_accepts: row.agent_accepts,
    warnings: speakerWarnings(row),
    desired_revision_id: row.desired_revision_id,
    applied_revision_id: row.applied_revision_id,
    dispatch_status: row.dispatch_status,
    sync_status: syncStatusOf(row),
    last_error: row.last_error,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

/**
 * `rlt_<secret>`, followed by `.<hex>` of the gRPC CA's public-key hash when there is one: the
 * agent takes the pin from the token itself and refuses a controller whose certificate chain
 * does not hold that CA (kubeadm's discovery-token-ca-cert-hash, in one string).
 */
async function newToken(tx: Db, tenantId: string, speakerId: string, now: Date, caHash: string | null) {
  const pin = caHash ? `.${caHash.replace(/^sha256:/, "")}` : "";
  const token = `rlt_${randomBytes(32).toString("base64url")}${pin}`;
  const expires = new Date(now.getTime() + ENROLLMENT_TTL_MS);
  await insertEnrollmentToken(tx, {
    id: uuidv7(),
    tenant_id: tenantId,
    speaker_id: speakerId,
    token_hash: hashToken(token),
    expires_at: expires,
    created_at: now,
  });
  return { token, expires };
}

export function createSpeakerService(deps: { sql: Db; audit: AuditWriter; bus: Bus; onKeysChanged?: () => void; caHash?: string | null }) {
  const mustFind = async (db: Db, tenantId: string, id: string, forUpdate = false) => {
    const row = await findSpeakerById(db, tenantId, id, forUpdate);
    if (!row) throw new NotFoundError("speaker", id);
    return row;
  };
  const view = (r: SpeakerRow) => ({ name: r.name, router_id: r.router_id, asn: Number(r.asn), policies_json: r.policies_json, metadata: r.metadata });

  return {
    mustFind,
    async create(
      tx: Db,
      ctx: RequestContext,
      body: {
        name: string;
        mode: "remote" | "local";
        router_id: string;
        asn: number;
        policies_json?: Record<string, unknown> | undefined;
        metadata?: Record<string, unknown> | undefined;
      },
    ) {
      if (await findSpeakerByName(tx, ctx.principal.tenantId, body.name)) throw new ConflictError(`a speaker named ${body.name} exists`);
      const row = await insertSpeaker(tx, {
        id: uuidv7(),
        tenant_id: ctx.principal.tenantId,
        name: body.name,
        mode: body.mode,
        router_id: body.router_id,
        asn: body.asn,
        policies_json: body.policies_json ?? {},
        metadata: body.metadata ?? {},
        created_at: ctx.now,
      });
      // An operator's speaker is made without one: an admin issues it (POST …/enrollment-token).
      const token = body.mode === "remote" && mayEnroll(ctx) ? await newToken(tx, ctx.principal.tenantId, row.id, ctx.now, deps.caHash ?? null) : null;
      await deps.audit.record(tx, ctx, {
        action: "create",
        resource_type: "speaker",
        resource_id: row.id,
        summary: `speaker ${row.name} (${row.mode}) created`,
        changes: changesOf(null, view(row), ["name", "router_id", "asn", "policies_json", "metadata"]),
      });
      return { ...toSpeaker(row), enrollment_token: token?.token ?? null, enrollment_token_expires_at: token ? token.expires.toISOString() : null };
    },

    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number }) {
      const afterId = afterIdOf(q.cursor);
      const rows = await listSpeakers(deps.sql, ctx.principal.tenantId, { afterId, limit: q.limit });
      return { page: toPage(rows, q.limit, (r) => [r.id], toSpeaker), rows: rows.slice(0, q.limit) };
    },

    async get(ctx: RequestContext, id: string) {
      return toSpeaker(await mustFind(deps.sql, ctx.principal.tenantId, id));
    },

    async update(
      tx: Db,
      ctx: RequestContext,
      id: string,
      body: {
        name?: string | undefined;
        router_id?: string | undefined;
        asn?: number | undefined;
        policies_json?: Record<string, unknown> | undefined;
        metadata?: Record<string, unknown> | undefined;
      },
    ) {
      const before = await mustFind(tx, ctx.principal.tenantId, id, true);
      if (body.name && body.name !== before.name && (await findSpeakerByName(tx, ctx.principal.tenantId, body.name))) {
        throw new ConflictError(`a speaker named ${body.name} exists`);
      }
      const after = await updateSpeaker(tx, ctx.principal.tenantId, id, {
        name: body.name ?? before.name,
        router_id: body.router_id ?? before.router_id,
        asn: body.asn ?? Number(before.asn),
        policies_json: body.policies_json ?? before.policies_json,
        metadata: body.metadata ?? before.metadata,
        updated_at: ctx.now,
      });
      await deps.audit.record(tx, ctx, {
        action: "update",
        resource_type: "speaker",
        resource_id: id,
        summary: `speaker ${after.name} updated`,
        changes: changesOf(view(before), view(after), ["name", "router_id", "asn", "policies_json", "metadata"]),
      });
      return toSpeaker(after);
    },

    /** 409 while peers name the speaker, unless `force`; revokes its node keys, which only an admin may. */
    async remove(tx: Db, ctx: RequestContext, id: string, force: boolean) {
      const row = await mustFind(tx, ctx.principal.tenantId, id, true);
      if (!mayEnroll(ctx) && (await countLiveNodeKeys(tx, ctx.principal.tenantId, id, ctx.now)) > 0) {
        throw new ForbiddenError(
          `the speaker holds a node key (an enrolled router's identity): deleting it revokes the key, which needs the ${ENROLLMENT_ROLE} role or higher`,
        );
      }
      const peers = await listPeerNamesOfSpeaker(tx, id);
      if (peers.length && !force) {
        throw new ConflictError(`peers still name this speaker: ${peers.join(", ")}; remove it from them or delete with ?force=true`, { peers });
      }
      const revoked = await revokeApiKeysBySpeaker(tx, ctx.principal.tenantId, id, ctx.now);
      if (deps.onKeysChanged) ctx.afterCommit(deps.onKeysChanged);
      await deleteSpeaker(tx, ctx.principal.tenantId, id);
      await deps.audit.record(tx, ctx, {
        action: "delete",
        resource_type: "speaker",
        resource_id: id,
        summary: `speaker ${row.name} deleted (${revoked} node key(s) revoked${peers.length ? `, removed from peers ${peers.join(", ")}` : ""})`,
      });
    },

    async enrollmentToken(tx: Db, ctx: RequestContext, id: string) {
      const row = await mustFind(tx, ctx.principal.tenantId, id, true);
      if (row.mode !== "remote") throw new ConflictError("a local speaker does not enroll");
      const token = await newToken(tx, ctx.principal.tenantId, id, ctx.now, deps.caHash ?? null);
      await deps.audit.record(tx, ctx, {
        action: "update",
        resource_type: "speaker",
        resource_id: id,
        summary: `enrollment token issued for speaker ${row.name}`,
      });
      return { speaker_id: id, enrollment_token: token.token, expires_at: token.expires.toISOString() };
    },
  };
}

export type SpeakerService = ReturnType<typeof createSpeakerService>;
