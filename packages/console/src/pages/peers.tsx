import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { ConfirmButton } from "../confirm.js";
import { useLiveSpeakers } from "../live.js";
import { Link, navigate } from "../router.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { Ago, Badge, ErrorBox, Page, ToggleButton, useLoad } from "../ui.js";
import { useCommunities } from "./modules.js";
import { PeerForm } from "./peer-form.js";
import { protocolOf } from "./router.js";

type Peer = Schema<"Peer">;
type Speaker = Schema<"Speaker">;

function useSpeakers() {
  const { api } = useSession();
  return useItems(() => api.GET("/v1/speakers", { params: { query: { limit: 500 } } }), []);
}

function routersOf(p: Peer, speakers: Map<string, Speaker>) {
  return p.speaker_ids.map((id) => {
    const up = p.established_on_speakers.includes(id);
    return (
      <span key={id} class="chip">
        <Link href={`/routers/${id}`}>{speakers.get(id)?.name ?? id}</Link> <Badge tone={up ? "ok" : "warn"}>{up ? "Established" : "down"}</Badge>
      </span>
    );
  });
}

export function PeersPage() {
  const { api, can } = useSession();
  const peers = useItems(() => api.GET("/v1/peers", { params: { query: { limit: 500 } } }), []);
  const speakers = useSpeakers();
  const communities = useCommunities();
  const [adding, setAdding] = useState(false);
  const byId = new Map((speakers.data ?? []).map((s) => [s.id, s]));
  const columns: Column<Peer>[] = [
    {
      header: "Peer",
      cell: (p) => (
        <>
          <Link href={`/peers/${p.id}`}>{p.name}</Link> {p.enabled ? null : <Badge tone="warn">disabled</Badge>}
        </>
      ),
    },
    { header: "Neighbor", cell: (p) => `${p.neighbor_address} port ${p.neighbor_port}` },
    { header: "AS", num: true, cell: (p) => p.remote_asn },
    { header: "Password", cell: (p) => (p.password_set ? "set" : <span class="muted">none</span>) },
    { header: "Routers and sessions", testId: "peer-routers", cell: (p) => (p.speaker_ids.length ? routersOf(p, byId) : <span class="muted">none</span>) },
  ];
  return (
    <Page title="Peers" actions={can("operator") ? <ToggleButton label="New peer" open={adding} onToggle={setAdding} /> : null}>
      <ErrorBox error={peers.error ?? speakers.error} />
      {adding ? (
        <PeerForm
          speakers={speakers.data ?? []}
          communities={communities.data ?? []}
          submit="Create peer"
          onCancel={() => setAdding(false)}
          onSave={async (body) => {
            const created = await ok(api.POST("/v1/peers", { body }));
            navigate(`/peers/${created.id}`);
          }}
        />
      ) : null}
      <DataTable testId="peers" loaded={Boolean(peers.data)} columns={columns} rows={peers.data} rowKey={(p) => p.id} />
      {peers.data?.length === 0 ? <p class="muted">No peers yet.</p> : null}
    </Page>
  );
}

export function PeerPage({ id }: { id: string }) {
  const { api, can } = useSession();
  const peer = useLoad(() => ok(api.GET("/v1/peers/{id}", { params: { path: { id } } })), [id]);
  const speakers = useSpeakers();
  const communities = useCommunities();
  const fleet = useLiveSpeakers().speakers;
  const [editing, setEditing] = useState(false);
  const p = peer.data;
  const protocol = protocolOf(id);
  const rows = (p?.speaker_ids ?? []).map((sid) => {
    const s = fleet?.find((x) => x.id === sid) ?? speakers.data?.find((x) => x.id === sid);
    const session = s?.live?.sessions.find((x) => x.protocol === protocol);
    return { sid, name: s?.name ?? sid, session, stale: s?.live?.stale ?? true };
  });
  const columns: Column<(typeof rows)[number]>[] = [
    { header: "Router", cell: (r) => <Link href={`/routers/${r.sid}`}>{r.name}</Link> },
    {
      header: "Session",
      testId: "peer-session-state",
      cell: (r) =>
        r.session ? (
          <Badge tone={r.session.bgp_state === "Established" ? "ok" : "warn"}>{r.session.bgp_state ?? r.session.state}</Badge>
        ) : (
          <span class="muted">{fleet ? "not reported" : "…"}</span>
        ),
    },
    { header: "Since", cell: (r) => <Ago at={r.session?.since} /> },
    { header: "Exported", num: true, cell: (r) => r.session?.routes_exported ?? "—" },
    { header: "Last error", cell: (r) => r.session?.last_error ?? "" },
  ];
  return (
    <Page
      title={p ? `Peer ${p.name}` : "Peer"}
      actions={
        p && can("operator") ? (
          <>
            <ToggleButton label="Edit" open={editing} onToggle={setEditing} />
            <ConfirmButton
              label="Delete"
              question={`Delete peer ${p.name}? Its routers drop the session at their next apply.`}
              testId="delete-peer"
              action={async () => {
                await ok(api.DELETE("/v1/peers/{id}", { params: { path: { id } } }));
                navigate("/peers");
              }}
            />
          </>
        ) : null
      }
    >
      <ErrorBox error={peer.error} />
      {p && editing ? (
        <PeerForm
          peer={p}
          speakers={speakers.data ?? []}
          communities={communities.data ?? []}
          submit="Save peer"
          onCancel={() => setEditing(false)}
          onSave={async (body) => {
            await ok(api.PATCH("/v1/peers/{id}", { params: { path: { id } }, body }));
            setEditing(false);
            peer.reload();
          }}
        />
      ) : null}
      {p ? (
        <dl class="facts">
          <dt>Neighbor</dt>
          <dd>
            {p.neighbor_address} port {p.neighbor_port}, AS{p.remote_asn}
            {p.local_asn ? ` (local AS${p.local_asn})` : ""}
          </dd>
          <dt>Password</dt>
          <dd data-testid="peer-password">{p.password_set ? "set (write-only)" : "none"}</dd>
          <dt>Families</dt>
          <dd>{p.address_families.join(", ")}</dd>
          <dt>Multihop</dt>
          <dd>{String(p.multihop)}</dd>
          <dt>Description</dt>
          <dd>{p.description || "—"}</dd>
        </dl>
      ) : null}
      <h2>Session per router</h2>
      <DataTable testId="peer-sessions" columns={columns} rows={rows} rowKey={(r) => r.sid} />
      {p && p.speaker_ids.length === 0 ? <p class="muted">No router carries this peer.</p> : null}
    </Page>
  );
}
