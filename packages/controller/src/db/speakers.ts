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

/** One agent's report as its speaker's row records it. */
export interface SpeakerReportWrite {
  tenant_id: string;
  speaker_id: string;
  at: Date;
  agent_version: string | null;
  accepts: AgentAnnouncement | null;
  applied_revision_id: number | null;
  applied_sequence: number | null;
  applied_at: string | null;
  error: Record<string, unknown> | null;
  report: Record<string, unknown>;
  failed_revision_id: number | null;
}

/**
 * Records agents' reports on their speakers' rows, in one statement, and answers each row as it
 * was before, in the order of `reports` (undefined: no such speaker in that tenant). At most one
 * report per speaker (a second would meet the row the first one wrote in the same statement).
 * The dispatch status is decided here, against the row's own desired revision and sequence:
 * `failed` when the report fails the desired revision (`failed_revision_id`), `idle` once the
 * agent runs the latest bundle issued (its sequence, not merely the revision number: a re-issue
 * for a peer change carries the same revision), else unchanged. Rows are locked in id order, so
 * two replicas writing overlapping batches wait for each other instead of deadlocking.
 */
export async function recordSpeakerReports(db: Db, reports: SpeakerReportWrite[]): Promise<(Pick<SpeakerRow, "tenant_id" | "last_report"> | undefined)[]> {
  if (!reports.length) return [];
  const input = reports.map((p) => ({ ...p, at: p.at.toISOString() }));
  const rows = await db<(Pick<SpeakerRow, "tenant_id" | "last_report"> & { id: string })[]>`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${db.json(input as never)}) AS x(
        tenant_id uuid, speaker_id uuid, at timestamptz, agent_version text, accepts jsonb, applied_revision_id int,
        applied_sequence bigint, applied_at timestamptz, error jsonb, report jsonb, failed_revision_id int)
    ), old AS (
      SELECT s.id, s.tenant_id, s.last_report, s.desired_revision_id, s.bundle_sequence
      FROM speakers s JOIN input i ON s.tenant_id = i.tenant_id AND s.id = i.speaker_id ORDER BY s.id FOR UPDATE OF s
    )
    UPDATE speakers s SET last_seen_at = i.at, last_report_at = i.at, last_report = i.report,
      agent_version = COALESCE(i.agent_version, s.agent_version), agent_accepts = i.accepts,
      applied_revision_id = i.applied_revision_id, applied_sequence = i.applied_sequence,
      applied_at = i.applied_at, last_error = i.error,
      dispatch_status = CASE
        WHEN i.failed_revision_id IS NOT NULL AND i.failed_revision_id = old.desired_revision_id THEN 'failed'
        WHEN i.applied_revision_id IS NOT NULL AND i.applied_revision_id = old.desired_revision_id
          AND COALESCE(i.applied_sequence, 0) >= old.bundle_sequence THEN 'idle'
        ELSE s.dispatch_status END
    FROM old JOIN input i ON i.speaker_id = old.id
    WHERE s.id = old.id
    RETURNING old.id, old.tenant_id, old.last_report`;
  const before = new Map(rows.map((r) => [r.id, { tenant_id: r.tenant_id, last_report: r.last_report }]));
  return reports.map((p) => before.get(p.speaker_id));
}

/** What an apply's evaluation reads of a speaker: the issue it runs and how its last apply went. */
export type SpeakerOutcomeRow = Pick<
  SpeakerRow,
  "id" | "desired_revision_id" | "applied_revision_id" | "applied_sequence" | "dispatch_status" | "last_error"
> & {
  /** The digest the agent's last report said it runs (`last_report.applied_digest`). */
  applied_digest: string | null;
};

/**
 * The tenant's speakers among `ids`, as an evaluation reads them (only the speakers it still
 * waits for): the columns it decides on, not the whole row with its last report, which an
 * evaluation run every 250 ms of an apply's reports read and parsed for every pending speaker.
 */
export async function listSpeakerOutcomes(db: Db, tenantId: string, ids: string[]): Promise<SpeakerOutcomeRow[]> {
  if (!ids.length) return [];
  return db<SpeakerOutcomeRow[]>`
    SELECT id, desired_revision_id, applied_revision_id, applied_sequence, dispatch_status, last_error,
      last_report->>'applied_digest' AS applied_digest
    FROM speakers WHERE tenant_id = ${tenantId} AND id = ANY(${ids}::uuid[])`;
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
