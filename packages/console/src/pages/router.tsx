import { useEffect, useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { useSession } from "../session.js";
import { type Column, DataTable } from "../table.js";
import { Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";

type Session = Schema<"BgpSessionLive">;
type Live = Schema<"SpeakerLiveStatus">;

const sessionColumns: Column<Session>[] = [
  { header: "Protocol", cell: (x) => x.protocol },
  {
    header: "Neighbor",
    cell: (x) => (
      <>
        {x.neighbor_address ?? "—"} {x.remote_asn ? `AS${x.remote_asn}` : ""}
      </>
    ),
  },
  {
    header: "State",
    testId: "bgp-state",
    cell: (x) => (
      <>
        <Badge tone={x.bgp_state === "Established" ? "ok" : "warn"}>{x.bgp_state ?? x.state}</Badge>
        {x.last_error ? <span class="error small"> {x.last_error}</span> : null}
      </>
    ),
  },
  { header: "Since", cell: (x) => <Ago at={x.since} /> },
  { header: "Imported", num: true, cell: (x) => x.routes_imported ?? "—" },
  { header: "Exported", num: true, cell: (x) => x.routes_exported ?? "—" },
];

/**
 * The speaker's BGP sessions as its agent reports them now. There is no server push in the API;
 * `GET /v1/speakers?live=true` is its live route: each call asks the agent over the bus for a
 * fresh report and answers when it arrives (or after the timeout). The page asks again as soon
 * as an answer is in, at most once a second.
 */
function useLiveSessions(id: string) {
  const { api } = useSession();
  const [live, setLive] = useState<Live | null>(null);
  const [error, setError] = useState<Error | null>(null);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const round = async () => {
      const started = Date.now();
      try {
        const page = await ok(api.GET("/v1/speakers", { params: { query: { limit: 500, live: "true", live_timeout_ms: 3000 } } }));
        const mine = page.items.find((s) => s.id === id);
        if (!stopped) {
          setLive(mine?.live ?? null);
          setError(null);
        }
      } catch (e) {
        if (!stopped) setError(e as Error);
      }
      if (!stopped) timer = setTimeout(round, Math.max(0, 1000 - (Date.now() - started)));
    };
    void round();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [id]);
  return { live, error };
}

export function RouterPage({ id }: { id: string }) {
  const { api } = useSession();
  const speaker = useLoad(() => ok(api.GET("/v1/speakers/{speaker_id}", { params: { path: { speaker_id: id } } })), [id]);
  const { live, error } = useLiveSessions(id);
  const s = speaker.data;
  return (
    <Page title={s ? `Router ${s.name}` : "Router"}>
      <ErrorBox error={speaker.error ?? error} />
      {s ? (
        <dl class="facts">
          <dt>Sync</dt>
          <dd>{s.sync_status}</dd>
          <dt>Applied / desired</dt>
          <dd>
            {s.applied_revision_id ?? "—"} / {s.desired_revision_id ?? "—"}
          </dd>
          <dt>Agent</dt>
          <dd>{s.agent_version ?? "not enrolled"}</dd>
          <dt>BIRD</dt>
          <dd>{live?.bird?.version ?? "—"}</dd>
          <dt>Live report</dt>
          <dd>
            {live ? live.stale ? <Badge tone="warn">stale</Badge> : <Badge tone="ok">live</Badge> : "—"} <Ago at={live?.polled_at} />
          </dd>
        </dl>
      ) : null}
      <h2>BGP sessions</h2>
      <DataTable testId="sessions" columns={sessionColumns} rows={live?.sessions} rowKey={(x) => x.protocol} />
      {live && live.sessions.length === 0 ? <p class="muted">No BGP sessions reported.</p> : null}
    </Page>
  );
}
