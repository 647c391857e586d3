import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { Choice, useSubmit } from "../form.js";
import { Link, navigate } from "../router.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { Ago, Badge, ErrorBox, Page } from "../ui.js";
import { RPKI_POLICIES, type RpkiPolicy } from "./rpki.js";

const TYPES = ["IP_RANGES", "AS_PREFIXES", "DOMAINS", "COUNTRY"] as const;
const ACTIONS = [
  ["announce", "announce"],
  ["exclude", "exclude (never steer)"],
] as const;

/** The form's "max stale hours" text as the API takes it: empty follows the tenant, "forever" is null. */
function maxStaleOf(text: string): number | null | "tenant" {
  const t = text.trim();
  if (t === "" || t === "tenant") return "tenant";
  if (t === "forever") return null;
  return Number(t);
}

export function useCommunities() {
  const { api } = useSession();
  return useItems(() => api.GET("/v1/communities", { params: { query: { limit: 500 } } }), []);
}

type Community = Schema<"Community">;

function moduleColumns(communities: Map<string, Community>): Column<Schema<"Module">>[] {
  return [
    {
      header: "Name",
      cell: (m) => (
        <>
          <Link href={`/modules/${m.id}`}>{m.name}</Link>
          {m.enabled ? null : <Badge tone="warn">disabled</Badge>}
        </>
      ),
    },
    { header: "Type", cell: (m) => (m.action === "exclude" ? `${m.type} (exclude)` : m.type) },
    { header: "RPKI", cell: (m) => (m.type === "AS_PREFIXES" && m.rpki_policy !== "off" ? m.rpki_policy : <span class="muted">off</span>) },
    {
      header: "Community",
      cell: (m) => {
        const c = m.community_id ? communities.get(m.community_id) : null;
        return c ? `${c.community} ${c.title}` : <span class="muted">none</span>;
      },
    },
    { header: "IPv4", num: true, cell: (m) => m.snapshot.prefix_count_v4 },
    { header: "IPv6", num: true, cell: (m) => m.snapshot.prefix_count_v6 },
    {
      header: "Last refresh",
      cell: (m) => (
        <>
          <Ago at={m.last_refreshed_at} />
          {m.last_refresh_error ? <p class="error small">{m.last_refresh_error}</p> : null}
        </>
      ),
    },
  ];
}

export function ModulesPage() {
  const { api, can } = useSession();
  const modules = useItems(() => api.GET("/v1/modules", { params: { query: { limit: 500 } } }), []);
  const communities = useCommunities();
  const byId = new Map((communities.data ?? []).map((c) => [c.id, c]));
  return (
    <Page title="Modules">
      <ErrorBox error={modules.error ?? communities.error} />
      <DataTable testId="modules" loaded={Boolean(modules.data)} columns={moduleColumns(byId)} rows={modules.data} rowKey={(m) => m.id} />
      {modules.data && modules.data.length === 0 ? <p class="muted">No modules yet.</p> : null}
      {can("operator") ? <NewModule communities={communities.data ?? []} onCommunity={communities.reload} /> : null}
    </Page>
  );
}

function NewModule(props: { communities: { id: string; community: string; title: string }[]; onCommunity: () => void }) {
  const { api } = useSession();
  const [name, setName] = useState("");
  const [type, setType] = useState<(typeof TYPES)[number]>("IP_RANGES");
  const [communityId, setCommunityId] = useState("");
  const [action, setAction] = useState<"announce" | "exclude">("announce");
  const [maxStale, setMaxStale] = useState("");
  const [rpkiPolicy, setRpkiPolicy] = useState<RpkiPolicy>("off");
  const [newCommunity, setNewCommunity] = useState("");
  const [newTitle, setNewTitle] = useState("");
  const { error, submit } = useSubmit();
  return (
    <div class="forms">
      <form
        class="card"
        aria-label="New module"
        onSubmit={submit(async () => {
          const m = await ok(
            api.POST("/v1/modules", {
              body: {
                name,
                type,
                action,
                max_stale_hours: maxStaleOf(maxStale),
                community_id: communityId || null,
                // RPKI origin validation applies to AS entries' prefixes only.
                ...(type === "AS_PREFIXES" ? { rpki_policy: rpkiPolicy } : {}),
              },
            }),
          );
          navigate(`/modules/${m.id}`);
        })}
      >
        <h2>New module</h2>
        <label>
          Name <input name="module-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <Choice label="Type" name="module-type" value={type} onChange={(t) => setType(t as (typeof TYPES)[number])} options={TYPES} />
        <Choice
          label="Community"
          name="module-community"
          value={communityId}
          onChange={setCommunityId}
          options={props.communities.map((c) => [c.id, `${c.community} ${c.title}`] as const)}
          any="none"
        />
        {type === "AS_PREFIXES" ? (
          <Choice label="RPKI policy" name="module-rpki-policy" value={rpkiPolicy} onChange={(p) => setRpkiPolicy(p as RpkiPolicy)} options={RPKI_POLICIES} />
        ) : null}
        <Choice label="Action" name="module-action" value={action} onChange={(a) => setAction(a as "announce" | "exclude")} options={ACTIONS} />
        <label>
          Max stale hours{" "}
          <input
            name="module-max-stale-hours"
            placeholder="tenant setting; or hours, or forever"
            pattern="|tenant|forever|[1-9][0-9]{0,4}"
            value={maxStale}
            onInput={(e) => setMaxStale(e.currentTarget.value)}
          />
        </label>
        <button type="submit" class="primary">
          Create module
        </button>
        <ErrorBox error={error} />
      </form>
      <form
        class="card"
        aria-label="New community"
        onSubmit={submit(async () => {
          const c = await ok(api.POST("/v1/communities", { body: { community: newCommunity, title: newTitle } }));
          setCommunityId(c.id);
          setNewCommunity("");
          setNewTitle("");
          props.onCommunity();
        })}
      >
        <h2>New community</h2>
        <label>
          Community <input name="community" required placeholder="65000:100" value={newCommunity} onInput={(e) => setNewCommunity(e.currentTarget.value)} />
        </label>
        <label>
          Title <input name="community-title" required value={newTitle} onInput={(e) => setNewTitle(e.currentTarget.value)} />
        </label>
        <button type="submit">Add community</button>
      </form>
    </div>
  );
}
