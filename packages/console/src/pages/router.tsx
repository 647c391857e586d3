import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { SessionTimeline } from "../charts/session-timeline.js";
import { ConfirmButton } from "../confirm.js";
import { useLiveSpeakers } from "../live.js";
import { Link, navigate } from "../router.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { ActionButton, Ago, Badge, ErrorBox, Page, ToggleButton, useLoad } from "../ui.js";
import { EnrollmentPanel } from "./enrollment.js";
import { SpeakerForm } from "./speaker-form.js";

type Session = Schema<"BgpSessionLive">;

/** BIRD names a peer's protocol `rl_peer_<its id without dashes>`. */
export const protocolOf = (peerId: string) => `rl_peer_${peerId.toLowerCase().replaceAll("-", "")}`;

const sessionColumns = (peers: Map<string, Schema<"Peer">>): Column<Session>[] => [
  {
    header: "Peer",
    cell: (x) => {
      const peer = peers.get(x.protocol);
      return peer ? <Link href={`/peers/${peer.id}`}>{peer.name}</Link> : <code>{x.protocol}</code>;
    },
  },
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

export function RouterPage({ id }: { id: string }) {
  const { api, can } = useSession();
  const speaker = useLoad(() => ok(api.GET("/v1/speakers/{speaker_id}", { params: { path: { speaker_id: id } } })), [id]);
  const peers = useItems(() => api.GET("/v1/peers", { params: { query: { limit: 500 } } }), []);
  const fleet = useLiveSpeakers();
  const live = fleet.speakers?.find((x) => x.id === id)?.live ?? null;
  const error = fleet.error;
  const [editing, setEditing] = useState(false);
  const [token, setToken] = useState<{ token: string; expiresAt: string } | null>(null);
  const s = speaker.data;
  const mine = (peers.data ?? []).filter((p) => p.speaker_ids.includes(id));
  const byProtocol = new Map((peers.data ?? []).map((p) => [protocolOf(p.id), p]));
  return (
    <Page
      title={s ? `Router ${s.name}` : "Router"}
      actions={
        s && can("operator") ? (
          <>
            <ToggleButton label="Edit" open={editing} onToggle={setEditing} />
            {s.mode === "remote" && can("admin") ? (
              <ActionButton
                label="New enrollment token"
                action={async () => {
                  const t = await ok(api.POST("/v1/speakers/{speaker_id}/enrollment-token", { params: { path: { speaker_id: id } } }));
                  setToken({ token: t.enrollment_token, expiresAt: t.expires_at });
                }}
              />
            ) : null}
            <ConfirmButton
              label="Delete"
              question={`Delete router ${s.name}${mine.length ? ` and detach it from ${mine.length} peer(s)` : ""}?`}
              testId="delete-router"
              action={async () => {
                await ok(
                  api.DELETE("/v1/speakers/{speaker_id}", { params: { path: { speaker_id: id }, query: { force: mine.length > 0 ? "true" : "false" } } }),
                );
                navigate("/routers");
              }}
            />
          </>
        ) : null
      }
    >
      <ErrorBox error={speaker.error ?? error} />
      {s && editing ? (
        <SpeakerForm
          speaker={s}
          submit="Save router"
          onCancel={() => setEditing(false)}
          onSave={async (body) => {
            await ok(api.PATCH("/v1/speakers/{speaker_id}", { params: { path: { speaker_id: id } }, body }));
            setEditing(false);
            speaker.reload();
          }}
        />
      ) : null}
      {s && token ? <EnrollmentPanel speakerName={s.name} token={token.token} expiresAt={token.expiresAt} onDone={() => setToken(null)} /> : null}
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
      <h2>Peers</h2>
      {mine.length ? (
        <ul data-testid="router-peers">
          {mine.map((p) => (
            <li key={p.id}>
              <Link href={`/peers/${p.id}`}>{p.name}</Link> {p.neighbor_address} AS{p.remote_asn}
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">
          No peer is attached to this router. <Link href="/peers">Peers</Link>
        </p>
      )}
      <h2>BGP sessions</h2>
      <DataTable testId="sessions" columns={sessionColumns(byProtocol)} rows={live?.sessions} rowKey={(x) => x.protocol} />
      {live && live.sessions.length === 0 ? <p class="muted">No BGP sessions reported.</p> : null}
      <SessionTimeline speakerId={id} peerName={(protocol) => byProtocol.get(protocol)?.name ?? null} />
    </Page>
  );
}
