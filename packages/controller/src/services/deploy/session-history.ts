import type { SessionChangedEvent } from "@rlc/proto";
import { NotFoundError } from "@rlc/shared/errors";
import type { SessionHistoryEntry } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import { insertSessionChanges, listSessionChanges, type SessionChangeRow } from "../../db/session-changes.js";
import { findSpeakerById } from "../../db/speakers.js";
import { type Page, toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { isoRequired } from "../../lib/time.js";
import type { RequestContext } from "../access/context.js";

function toRow(c: SessionChangedEvent): SessionChangeRow {
  return {
    id: uuidv7(),
    tenant_id: c.tenant_id,
    speaker_id: c.speaker_id,
    at: new Date(c.at),
    protocol: c.protocol,
    peer_id: c.peer_id,
    neighbor_address: c.neighbor_address,
    previous_state: c.previous?.state ?? null,
    previous_bgp_state: c.previous?.bgp_state ?? null,
    state: c.current?.state ?? null,
    bgp_state: c.current?.bgp_state ?? null,
    since: c.current?.since ?? null,
    last_error: c.current?.last_error ?? c.previous?.last_error ?? null,
  };
}

function toEntry(r: SessionChangeRow & { peer_name: string | null }): SessionHistoryEntry {
  return {
    id: r.id,
    at: isoRequired(r.at),
    protocol: r.protocol,
    peer_id: r.peer_id,
    peer_name: r.peer_name,
    neighbor_address: r.neighbor_address,
    previous: r.previous_state === null ? null : { state: r.previous_state, bgp_state: r.previous_bgp_state },
    current: r.state === null ? null : { state: r.state, bgp_state: r.bgp_state },
    since: r.since,
    last_error: r.last_error,
  };
}

/**
 * The history of a speaker's BGP sessions: each change a status report shows is written as the
 * report is received (beside the `session` event it publishes), and read back by the API.
 */
export function createSessionHistory(deps: { sql: Db }) {
  return {
    /** Writes one report's changes (all of one speaker); nothing when there are none. */
    record(changes: SessionChangedEvent[]): Promise<void> {
      return insertSessionChanges(deps.sql, changes.map(toRow));
    },
    async list(
      ctx: Pick<RequestContext, "principal">,
      speakerId: string,
      q: { cursor?: string | undefined; limit: number; since?: string | undefined; until?: string | undefined },
    ): Promise<Page<SessionHistoryEntry>> {
      const afterId = afterIdOf(q.cursor);
      const tenantId = ctx.principal.tenantId;
      if (!(await findSpeakerById(deps.sql, tenantId, speakerId))) throw new NotFoundError("speaker", speakerId);
      const rows = await listSessionChanges(deps.sql, tenantId, speakerId, { afterId, limit: q.limit, since: q.since, until: q.until });
      return toPage(rows, q.limit, (r) => [r.id], toEntry);
    },
  };
}

export type SessionHistory = ReturnType<typeof createSessionHistory>;
