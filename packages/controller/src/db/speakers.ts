import type { AgentAnnouncement } from "@rlc/shared/bundle";
import type { Db } from "./connect.js";
import { type KeysetPage, tenantTable } from "./tenant-table.js";

export interface SpeakerRow {
  id: string;
  tenant_id: string;
  name: string;
  mode: "remote" | "local";
  hostname: string | null;
  router_id: string;
  asn: string;
  policies_json: Record<string, unknown>;
  metadata: Record<string, unknown>;
  enrolled_at: Date | null;
  last_seen_at: Date | null;
  agent_version: string | null;
  /** What the agent announced it accepts at its last contact; null: nothing (an older agent), or no contact yet. */
  agent_accepts: AgentAnnouncement | null;
  desired_revision_id: number | null;
  applied_revision_id: number | null;
  applied_sequence: string | null;
  applied_at: Date | null;
  dispatch_status: "idle" | "pending" | "dispatched" | "failed";
  last_error: Record<string, unknown> | null;
  last_report: Record<string, unknown> | null;
  last_report_at: Date | null;
  bundle_sequence: string;
  created_at: Date;
  updated_at: Date;
}

export async function insertSpeaker(
  db: Db,
  row: Pick<SpeakerRow, "id" | "tenant_id" | "name" | "mode" | "router_id" | "policies_json" | "metadata" | "created_at"> & { asn: number },
): Promise<SpeakerRow> {
  const [r] = await db<SpeakerRow[]>`
    INSERT INTO speakers (id, tenant_id, name, mode, router_id, asn, policies_json, metadata, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.name}, ${row.mode}, ${row.router_id}, ${row.asn}, ${db.json(row.policies_json as never)},
            ${db.json(row.metadata as never)}, ${row.created_at}, ${row.created_at})
    RETURNING *`;
  return r!;
}

/** What an update of a speaker sets (its mode is fixed when it is made). */
export interface SpeakerWrite {
  name: string;
  router_id: string;
  asn: number;
  policies_json: Record<string, unknown>;
  metadata: Record<string, unknown>;
  updated_at: Date;
}

const speakers = tenantTable<SpeakerRow>("speakers");
export const { findById: findSpeakerById, findByName: findSpeakerByName, listAll: listAllSpeakers, deleteById: deleteSpeaker } = speakers;

export function updateSpeaker(db: Db, tenantId: string, id: string, p: SpeakerWrite): Promise<SpeakerRow> {
  const set = db`
    name = ${p.name}, router_id = ${p.router_id}, asn = ${p.asn}, policies_json = ${db.json(p.policies_json as never)},
    metadata = ${db.json(p.metadata as never)}, updated_at = ${p.updated_at}`;
  return speakers.update(db, tenantId, id, set);
}

export function listSpeakers(db: Db, tenantId: string, page: KeysetPage): Promise<SpeakerRow[]> {
  return speakers.list(db, tenantId, page);
}

export async function markSpeakerEnrolled(
  db: Db,
  id: string,
  p: { hostname: string; agent_version: string; at: Date; accepts: AgentAnnouncement | null },
): Promise<void> {
  await db`
    UPDATE speakers SET hostname = ${p.hostname}, agent_version = ${p.agent_version}, enrolled_at = ${p.at}, last_seen_at = ${p.at}, updated_at = ${p.at},
      agent_accepts = ${p.accepts === null ? null : db.json(p.accepts as never)}
    WHERE id = ${id}`;
}

/** What the agent announced as it opened its Watch stream (null: nothing). */
export async function recordAgentAccepts(db: Db, tenantId: string, id: string, accepts: AgentAnnouncement | null): Promise<void> {
  await db`
    UPDATE speakers SET agent_accepts = ${accepts === null ? null : db.json(accepts as never)}
    WHERE tenant_id = ${tenantId} AND id = ${id} AND agent_accepts IS DISTINCT FROM ${accepts === null ? null : db.json(accepts as never)}`;
}

/** Sets the desired revision and takes the next bundle sequence; answers the new sequence. */
export async function setDesiredRevision(db: Db, id: string, revisionId: number, at: Date): Promise<number> {
  const [r] = await db<{ bundle_sequence: string }[]>`
    UPDATE speakers SET desired_revision_id = ${revisionId}, bundle_sequence = bundle_sequence + 1, dispatch_status = 'pending', updated_at = ${at}
    WHERE id = ${id} RETURNING bundle_sequence`;
  return Number(r!.bundle_sequence);
}

/**
 * The apply's step for many speakers at once: each one's desired revision, its next bundle
 * sequence and `dispatched`, in one statement; answers the rows as updated (speakers gone or of
 * another tenant are not among them). Rows are locked in id order, so two applies over the same
 * speakers wait for each other instead of deadlocking.
 */
export async function setDesiredRevisions(db: Db, tenantId: string, ids: string[], revisionId: number, at: Date): Promise<SpeakerRow[]> {
  if (!ids.length) return [];
  return db<SpeakerRow[]>`
    UPDATE speakers s SET desired_revision_id = ${revisionId}, bundle_sequence = s.bundle_sequence + 1, dispatch_status = 'dispatched', updated_at = ${at}
    FROM (SELECT id FROM speakers WHERE tenant_id = ${tenantId} AND id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE) locked
    WHERE s.id = locked.id RETURNING s.*`;
}

export async function setDispatchStatus(db: Db, id: string, status: SpeakerRow["dispatch_status"]): Promise<void> {
  await db`UPDATE speakers SET dispatch_status = ${status} WHERE id = ${id}`;
}

/**
 * Records an agent's report on its speaker's row, in one statement, and answers the row as it
 * was before (undefined: no such speaker in the tenant). The dispatch status is decided here,
 * against the row's own desired revision and sequence: `failed` when the report fails the
 * desired revision (`failed_revision_id`), `idle` once the agent runs the latest bundle issued
 * (its sequence, not merely the revision number: a re-issue for a peer change carries the same
 * revision), else unchanged.
 */
export async function recordSpeakerReport(
  db: Db,
  tenantId: string,
  id: string,
  p: {
    at: Date;
    agent_version: string | null;
    accepts: AgentAnnouncement | null;
    applied_revision_id: number | null;
    applied_sequence: number | null;
    applied_at: string | null;
    error: Record<string, unknown> | null;
    report: Record<string, unknown>;
    failed_revision_id: number | null;
  },
): Promise<Pick<SpeakerRow, "tenant_id" | "last_report"> | undefined> {
  const [r] = await db<Pick<SpeakerRow, "tenant_id" | "last_report">[]>`
    WITH old AS (SELECT id, tenant_id, last_report, desired_revision_id, bundle_sequence FROM speakers WHERE tenant_id = ${tenantId} AND id = ${id} FOR UPDATE)
    UPDATE speakers s SET last_seen_at = ${p.at}, last_report_at = ${p.at}, last_report = ${db.json(p.report as never)},
      agent_version = COALESCE(${p.agent_version}, s.agent_version), agent_accepts = ${p.accepts === null ? null : db.json(p.accepts as never)},
      applied_revision_id = ${p.applied_revision_id}, applied_sequence = ${p.applied_sequence},
      applied_at = ${p.applied_at}, last_error = ${p.error === null ? null : db.json(p.error as never)},
      dispatch_status = CASE
        WHEN ${p.failed_revision_id}::int IS NOT NULL AND ${p.failed_revision_id}::int = old.desired_revision_id THEN 'failed'
        WHEN ${p.applied_revision_id}::int IS NOT NULL AND ${p.applied_revision_id}::int = old.desired_revision_id
          AND ${p.applied_sequence ?? 0}::bigint >= old.bundle_sequence THEN 'idle'
        ELSE s.dispatch_status END
    FROM old WHERE s.id = old.id
    RETURNING old.tenant_id, old.last_report`;
  return r;
}

/** The tenant's speakers among `ids` (an evaluation reads only the speakers it still waits for). */
export async function listSpeakersByIds(db: Db, tenantId: string, ids: string[]): Promise<SpeakerRow[]> {
  if (!ids.length) return [];
  return db<SpeakerRow[]>`SELECT * FROM speakers WHERE tenant_id = ${tenantId} AND id = ANY(${ids}::uuid[])`;
}

/** Revisions a speaker has as desired or applied: pruning keeps them. */
export async function listProtectedRevisionIds(db: Db, tenantId: string): Promise<Set<number>> {
  const rows = await db<{ r: number | null; a: number | null }[]>`
    SELECT desired_revision_id AS r, applied_revision_id AS a FROM speakers WHERE tenant_id = ${tenantId}`;
  const out = new Set<number>();
  for (const row of rows) {
    if (row.r !== null) out.add(row.r);
    if (row.a !== null) out.add(row.a);
  }
  return out;
}
