import { useEffect, useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { useSession } from "../session.js";
import { DataTable } from "../table.js";
import { Chart } from "./chart.js";

type Change = Schema<"SessionHistoryEntry">;
type State = Change["current"];

/** How far back the router page looks, and at most how many changes it reads (10 pages of 500). */
export const TIMELINE_DAYS = 7;
const MAX_PAGES = 10;

/** A session counts as up when BGP is Established (or BIRD says `up` without a BGP state). */
export const isUp = (s: State) => (s ? (s.bgp_state ? s.bgp_state === "Established" : s.state === "up") : false);
const stateText = (s: State) => (s ? (s.bgp_state ?? s.state) : "gone");

/**
 * Each session in a lane of its own (lane i spans i..i+1): the line sits high in its lane
 * (i + 0.75) while the session is up, low (i + 0.25) while it is not, and is absent while the
 * session did not exist. x: each time a change came, then now.
 */
export function timelineOf(changes: Change[], nameOf: (c: Change) => string, now: number) {
  const lanes = new Map<string, { label: string; at: Map<number, State> }>();
  for (const c of changes) {
    let lane = lanes.get(c.protocol);
    if (!lane) lanes.set(c.protocol, (lane = { label: nameOf(c), at: new Map() }));
    lane.at.set(Date.parse(c.at) / 1000, c.current);
  }
  const x = [...new Set(changes.map((c) => Date.parse(c.at) / 1000)), now / 1000].sort((a, b) => a - b);
  const series = [...lanes.values()].map((lane, i) => {
    let state: State | undefined;
    const values = x.map((t) => {
      if (lane.at.has(t)) state = lane.at.get(t);
      return state ? i + (isUp(state) ? 0.75 : 0.25) : null;
    });
    return { label: lane.label, values };
  });
  return { x, series };
}

const COLORS = ["--accent", "--ok", "--warn", "--bad", "--muted"];

/**
 * The router's BGP sessions over the last week, from `GET /v1/speakers/{id}/sessions/history`:
 * a step line per peer (high: Established), and the changes beside it, newest first.
 */
export function SessionTimeline({ speakerId, peerName }: { speakerId: string; peerName: (protocol: string) => string | null }) {
  const { api } = useSession();
  const [changes, setChanges] = useState<Change[] | null>(null);
  const [error, setError] = useState<Error | null>(null);
  useEffect(() => {
    let stopped = false;
    (async () => {
      const since = new Date(Date.now() - TIMELINE_DAYS * 86_400_000).toISOString();
      const all: Change[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < MAX_PAGES; i++) {
        const page = await ok(
          api.GET("/v1/speakers/{speaker_id}/sessions/history", {
            params: { path: { speaker_id: speakerId }, query: { since, limit: 500, ...(cursor ? { cursor } : {}) } },
          }),
        );
        all.push(...page.items);
        if (!page.has_more || !page.next_cursor) break;
        cursor = page.next_cursor;
      }
      if (!stopped) setChanges(all);
    })().catch((e: Error) => !stopped && setError(e));
    return () => {
      stopped = true;
    };
  }, [speakerId]);
  const nameOf = (c: Change) => c.peer_name ?? peerName(c.protocol) ?? c.protocol;
  if (error) return <p class="error">The session history could not be read: {error.message}</p>;
  if (!changes) return <p class="muted">Reading the session history…</p>;
  if (changes.length === 0) return <p class="muted">No BGP session changed in the last {TIMELINE_DAYS} days.</p>;
  const { x, series } = timelineOf(changes, nameOf, Date.now());
  return (
    <section class="picture" aria-labelledby="session-timeline">
      <h3 id="session-timeline">Sessions over the last {TIMELINE_DAYS} days</h3>
      <Chart
        label={`BGP sessions over time, one lane per peer (${series.map((s) => s.label).join(", ")}); high: Established, low: not. The changes are listed in the table.`}
        kind="steps"
        testId="chart-sessions"
        height={Math.max(120, 50 * series.length + 60)}
        x={x}
        yRange={[0, series.length]}
        yTicks={series.map((s, i) => ({ value: i + 0.5, label: s.label }))}
        series={series.map((s, i) => ({ ...s, color: COLORS[i % COLORS.length]! }))}
      />
      <DataTable
        testId="session-history-numbers"
        caption="Session changes, newest first"
        columns={[
          { header: "When", cell: (c) => <time dateTime={c.at}>{new Date(c.at).toLocaleString()}</time> },
          { header: "Peer", cell: nameOf },
          { header: "From", cell: (c) => stateText(c.previous) },
          {
            header: "To",
            cell: (c) => (
              <>
                {stateText(c.current)}
                {c.last_error && !isUp(c.current) ? <span class="error small"> {c.last_error}</span> : null}
              </>
            ),
          },
        ]}
        rows={[...changes].reverse()}
        rowKey={(c) => c.id}
        rowAttrs={(c) => ({ "data-protocol": c.protocol })}
      />
    </section>
  );
}
