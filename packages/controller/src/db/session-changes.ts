import type { Db } from "./connect.js";

/** One BGP session state change a speaker's report showed (`speaker_session_changes`). */
export interface SessionChangeRow {
  id: string;
  tenant_id: string;
  speaker_id: string;
  at: Date;
  protocol: string;
  peer_id: string | null;
  neighbor_address: string | null;
  previous_state: string | null;
  previous_bgp_state: string | null;
  state: string | null;
  bgp_state: string | null;
  since: string | null;
  last_error: string | null;
}

/** Days a change is kept: older rows of the speaker go as new ones are written. */
export const SESSION_HISTORY_DAYS = 30;

const COLUMNS = [
  "id",
  "tenant_id",
  "speaker_id",
  "at",
  "protocol",
  "peer_id",
  "neighbor_address",
  "previous_state",
  "previous_bgp_state",
  "state",
  "bgp_state",
  "since",
  "last_error",
] as const;

/** Rows an INSERT takes: 13 parameters a row stays far below PostgreSQL's 65535 a statement. */
const CHUNK = 1000;

/**
 * Writes a report's changes, all of one speaker, and deletes that speaker's rows older than
 * the retention with the first chunk: a report that changed nothing costs no query at all.
 */
export async function insertSessionChanges(db: Db, rows: SessionChangeRow[]): Promise<void> {
  const first = rows[0];
  if (!first) return;
  await db`
    WITH pruned AS (
      DELETE FROM speaker_session_changes
      WHERE tenant_id = ${first.tenant_id} AND speaker_id = ${first.speaker_id}
        AND at < ${first.at}::timestamptz - make_interval(days => ${SESSION_HISTORY_DAYS})
    )
    INSERT INTO speaker_session_changes ${db(rows.slice(0, CHUNK), [...COLUMNS])}`;
  for (let i = CHUNK; i < rows.length; i += CHUNK) await db`INSERT INTO speaker_session_changes ${db(rows.slice(i, i + CHUNK), [...COLUMNS])}`;
}

export interface SessionChangeFilter {
  afterId: string | null;
  limit: number;
  since?: string | undefined;
  until?: string | undefined;
}

/** A speaker's changes, oldest first (ids are time-ordered), with the peer's name when it still exists. */
export function listSessionChanges(db: Db, tenantId: string, speakerId: string, f: SessionChangeFilter) {
  return db<(SessionChangeRow & { peer_name: string | null })[]>`
    SELECT c.*, p.name AS peer_name FROM speaker_session_changes c
    LEFT JOIN peers p ON p.tenant_id = c.tenant_id AND p.id::text = c.peer_id
    WHERE c.tenant_id = ${tenantId} AND c.speaker_id = ${speakerId}
      ${f.since === undefined ? db`` : db`AND c.at >= ${f.since}`}
      ${f.until === undefined ? db`` : db`AND c.at < ${f.until}`}
      ${f.afterId === null ? db`` : db`AND c.id > ${f.afterId}`}
    ORDER BY c.id LIMIT ${f.limit + 1}`;
}
