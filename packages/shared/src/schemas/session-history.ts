import { z } from "zod";
import { listQuery, Timestamp, Uuid } from "./common.js";

/** A session's state at one side of a change; null on that side when the session was not there. */
export const SessionStateAt = z
  .object({
    state: z.string().meta({ description: "BIRD's protocol state (`up`, `down`, `start`, …); `unknown` when the report named none." }),
    bgp_state: z.string().nullable().meta({ description: "The BGP state (`Established`, `Active`, …), when BIRD tells it." }),
  })
  .meta({ id: "SessionStateAt" });

export const SessionHistoryEntry = z
  .object({
    id: Uuid.meta({ description: "The change's id; ids are time-ordered, and the list is in their order." }),
    at: Timestamp.meta({ description: "When the controller received the report that showed the change." }),
    protocol: z.string().meta({ description: "The BIRD protocol name of the session (`rl_peer_…`)." }),
    peer_id: z.string().nullable().meta({ description: "The peer the session belongs to, as the report named it." }),
    peer_name: z.string().nullable().meta({ description: "That peer's name; null when the report named no peer or the peer is deleted." }),
    neighbor_address: z.string().nullable(),
    previous: SessionStateAt.nullable().meta({ description: "As the speaker's previous report saw the session; null: it appeared." }),
    current: SessionStateAt.nullable().meta({ description: "As this report sees it; null: the session went away." }),
    since: z.string().nullable().meta({ description: "Since when BIRD says the session is in its current state, as BIRD wrote it." }),
    last_error: z.string().nullable().meta({ description: "BIRD's last error for the session, if it gave one." }),
  })
  .meta({
    id: "SessionHistoryEntry",
    description:
      "A BGP session whose state or BGP state differed from the speaker's previous report, or that appeared or went away. " +
      "The first report of a speaker makes each of its sessions appear.",
  });
export type SessionHistoryEntry = z.infer<typeof SessionHistoryEntry>;

const Time = z.iso.datetime({ offset: true });

export const SessionHistoryQuery = listQuery({
  since: Time.optional().describe("Only changes at or after this time (RFC 3339)."),
  until: Time.optional().describe("Only changes before this time (RFC 3339)."),
});
