import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { Db } from "../../db/connect.js";
import {
  countExistingCommunities,
  countExistingSpeakers,
  deletePeer,
  findPeerById,
  findPeerByName,
  insertPeer,
  listPeers,
  type PeerRow,
  type PeerWrite,
  updatePeer,
} from "../../db/peers.js";
import { listAllSpeakers, type SpeakerRow } from "../../db/speakers.js";
import { toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import type { SecretBox } from "../../lib/secret-box.js";
import { isoRequired } from "../../lib/time.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import type { JobQueue } from "../operations/jobs.js";
import { reportedSessions } from "./speakers.js";

/** The session fields, derived from the speakers' last reports; the password only as `password_set`. */
export function toPeer(row: PeerRow, speakers: SpeakerRow[]) {
  const on: string[] = [];
  const established: string[] = [];
  for (const s of speakers) {
    const session = reportedSessions(s).find((x) => x.peer_id === row.id);
    if (!session) continue;
    on.push(s.id);
    if (session.bgp_state === "Established") established.push(s.id);
  }
  const connected = established[0] ?? null;
  const wanted = new Set(row.enabled ? row.speaker_ids : []);
  const mismatch = wanted.size !== established.length || established.some((id) => !wanted.has(id));
  return {
    id: row.id,
    name: row.name,
    neighbor_address: row.neighbor_address,
    neighbor_port: row.neighbor_port,
    remote_asn: Number(row.remote_asn),
    local_asn: row.local_asn === null ? null : Number(row.local_asn),
    description: row.description,
    enabled: row.enabled,
    password_set: row.password !== null,
    multihop: row.multihop,
    address_families: row.address_families as ("ipv4" | "ipv6")[],
    export_community_ids: row.export_community_ids,
    speaker_ids: row.speaker_ids,
    connected_speaker_id: connected,
    connected_speaker_label: connected ? (speakers.find((s) => s.id === connected)?.name ?? null) : null,
    session_on_speakers: on,
    established_on_speakers: established,
    session_mismatch: mismatch,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

/**
 * A password is bound to the neighbor it was set for: an update that points the peer at another
 * address without sending the password again drops it, so nobody who may edit peers can send an
 * admin's TCP-MD5 secret to a router of their choosing.
 */
const movesAway = (before: PeerRow, body: { neighbor_address?: string | undefined }) =>
  body.neighbor_address !== undefined && body.neighbor_address !== before.neighbor_address;

const AUDITED = [
  "name",
  "neighbor_address",
  "neighbor_port",
  "remote_asn",
  "local_asn",
  "description",
  "enabled",
  "password",
  "multihop",
  "address_families",
  "export_community_ids",
  "speaker_ids",
] as const;

/**
 * The password is write-only: sealed with the data key before it reaches the database, shown as
 * `password_set`, opened only to sign the bundle of a speaker the peer is on.
 */
export function createPeerService(deps: { sql: Db; audit: AuditWriter; secrets: SecretBox; queue: Pick<JobQueue, "enqueue"> }) {
  const seal = (password: string | null) => (password === null ? null : deps.secrets.seal(password));
  /** The stored password as it must be written back: sealed (a row not yet carried over is sealed now). */
  const kept = (row: PeerRow) => (row.password === null || row.password_sealed ? row.password : deps.secrets.seal(row.password));
  const mustFind = async (db: Db, tenantId: string, id: string) => {
    const row = await findPeerById(db, tenantId, id);
    if (!row) throw new NotFoundError("peer", id);
    return row;
  };
  const checkRefs = async (db: Db, tenantId: string, p: PeerWrite) => {
    const speakers = [...new Set(p.speaker_ids)];
    if ((await countExistingSpeakers(db, tenantId, speakers)) !== speakers.length) {
      throw new ValidationError("speaker_ids names a speaker that does not exist", [{ path: "body.speaker_ids", message: "unknown speaker" }]);
    }
    const communities = [...new Set(p.export_community_ids)];
    if ((await countExistingCommunities(db, tenantId, communities)) !== communities.length) {
      throw new ValidationError("export_community_ids names a community that does not exist", [
        { path: "body.export_community_ids", message: "unknown community" },
      ]);
    }
    p.speaker_ids = speakers;
    p.export_community_ids = communities;
  };
  /** The peer_reconcile job of a peer change: no ingest, then an apply to the affected speakers. */
  const reconcile = (tx: Db, ctx: RequestContext, peerId: string, speakerIds: string[]) =>
    deps.queue.enqueue(tx, {
      tenantId: ctx.principal.tenantId,
      type: "peer_reconcile",
      params: { peer_id: peerId, speaker_ids: [...new Set(speakerIds)] },
      createdBy: `key:${ctx.principal.keyPrefix}`,
      now: ctx.now,
      afterCommit: ctx.afterCommit,
    });
  const view = (r: PeerRow) => ({
    ...r,
    remote_asn: Number(r.remote_asn),
    local_asn: r.local_asn === null ? null : Number(r.local_asn),
    password: r.password === null ? null : "set",
  });

  return {
    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number }) {
      const rows = await listPeers(deps.sql, ctx.principal.tenantId, { afterId: afterIdOf(q.cursor), limit: q.limit });
      const speakers = await listAllSpeakers(deps.sql, ctx.principal.tenantId);
      return toPage(
        rows,
        q.limit,
        (r) => [r.id],
        (r) => toPeer(r, speakers),
      );
    },

    async get(ctx: RequestContext, id: string) {
      return toPeer(await mustFind(deps.sql, ctx.principal.tenantId, id), await listAllSpeakers(deps.sql, ctx.principal.tenantId));
    },

    async create(
      tx: Db,
      ctx: RequestContext,
      body: Omit<PeerWrite, "id" | "local_asn" | "description" | "password"> & {
        local_asn?: number | null | undefined;
        description?: string | undefined;
        password?: string | null | undefined;
      },
    ) {
      const tenantId = ctx.principal.tenantId;
      if (await findPeerByName(tx, tenantId, body.name)) throw new ConflictError(`a peer named ${body.name} exists`);
      const p: PeerWrite = {
        ...body,
        id: uuidv7(),
        local_asn: body.local_asn ?? null,
        description: body.description ?? "",
        password: seal(body.password ?? null),
      };
      await checkRefs(tx, tenantId, p);
      await insertPeer(tx, tenantId, p, ctx.now);
      const row = (await findPeerById(tx, tenantId, p.id))!;
      const job = await reconcile(tx, ctx, p.id, p.speaker_ids);
      await deps.audit.record(tx, ctx, {
        action: "create",
        resource_type: "peer",
        resource_id: p.id,
        summary: `peer ${p.name} (${p.neighbor_address}) created`,
        changes: changesOf(null, view(row), AUDITED),
      });
      return { ...toPeer(row, await listAllSpeakers(tx, tenantId)), reconcile_job_id: job.id };
    },

    async update(tx: Db, ctx: RequestContext, id: string, body: Partial<Omit<PeerWrite, "id">>) {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFind(tx, tenantId, id);
      if (body.name && body.name !== before.name && (await findPeerByName(tx, tenantId, body.name)))
        throw new ConflictError(`a peer named ${body.name} exists`);
      const p: PeerWrite = {
        id,
        name: body.name ?? before.name,
        neighbor_address: body.neighbor_address ?? before.neighbor_address,
        neighbor_port: body.neighbor_port ?? before.neighbor_port,
        remote_asn: body.remote_asn ?? Number(before.remote_asn),
        local_asn: body.local_asn === undefined ? (before.local_asn === null ? null : Number(before.local_asn)) : body.local_asn,
        description: body.description ?? before.description,
        enabled: body.enabled ?? before.enabled,
        password: body.password !== undefined ? seal(body.password) : movesAway(before, body) ? null : kept(before),
        multihop: body.multihop ?? before.multihop,
        address_families: body.address_families ?? before.address_families,
        export_community_ids: body.export_community_ids ?? before.export_community_ids,
        speaker_ids: body.speaker_ids ?? before.speaker_ids,
      };
      await checkRefs(tx, tenantId, p);
      await updatePeer(tx, tenantId, p, ctx.now);
      const after = (await findPeerById(tx, tenantId, id))!;
      const job = await reconcile(tx, ctx, id, [...before.speaker_ids, ...after.speaker_ids]);
      const changes = changesOf(view(before), view(after), AUDITED);
      // A new password replacing another reads "set" → "set": say it changed, never what it is.
      if (typeof body.password === "string" && before.password !== null) changes.password = { from: "set", to: "replaced" };
      await deps.audit.record(tx, ctx, { action: "update", resource_type: "peer", resource_id: id, summary: `peer ${after.name} updated`, changes });
      return { ...toPeer(after, await listAllSpeakers(tx, tenantId)), reconcile_job_id: job.id };
    },

    async remove(tx: Db, ctx: RequestContext, id: string) {
      const before = await mustFind(tx, ctx.principal.tenantId, id);
      await deletePeer(tx, ctx.principal.tenantId, id);
      const job = await reconcile(tx, ctx, id, before.speaker_ids);
      await deps.audit.record(tx, ctx, { action: "delete", resource_type: "peer", resource_id: id, summary: `peer ${before.name} deleted` });
      return { id, reconcile_job_id: job.id };
    },
  };
}
