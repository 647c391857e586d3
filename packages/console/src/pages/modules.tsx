import { useState } from "preact/hooks";
import { ok } from "../api.js";
import { Link, navigate } from "../router.js";
import { useSession } from "../session.js";
import { Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";

const TYPES = ["IP_RANGES", "AS_PREFIXES", "DOMAINS"] as const;

export function useCommunities() {
  const { api } = useSession();
  return useLoad(async () => (await ok(api.GET("/v1/communities", { params: { query: { limit: 500 } } }))).items, []);
}

export function ModulesPage() {
  const { api, can } = useSession();
  const modules = useLoad(async () => (await ok(api.GET("/v1/modules", { params: { query: { limit: 500 } } }))).items, []);
  const communities = useCommunities();
  const byId = new Map((communities.data ?? []).map((c) => [c.id, c]));
  return (
    <Page title="Modules">
      <ErrorBox error={modules.error ?? communities.error} />
      <div class="scroll">
        <table data-testid="modules" data-loaded={modules.data ? "" : undefined}>
          <thead>
            <tr>
              <th>Name</th>
              <th>Type</th>
              <th>Community</th>
              <th class="num">IPv4</th>
              <th class="num">IPv6</th>
              <th>Last refresh</th>
            </tr>
          </thead>
          <tbody>
            {(modules.data ?? []).map((m) => {
              const c = m.community_id ? byId.get(m.community_id) : null;
              return (
                <tr key={m.id}>
                  <td>
                    <Link href={`/modules/${m.id}`}>{m.name}</Link>
                    {m.enabled ? null : <Badge tone="warn">disabled</Badge>}
                  </td>
                  <td>{m.type}</td>
                  <td>{c ? `${c.community} ${c.title}` : <span class="muted">none</span>}</td>
                  <td class="num">{m.snapshot.prefix_count_v4}</td>
                  <td class="num">{m.snapshot.prefix_count_v6}</td>
                  <td>
                    <Ago at={m.last_refreshed_at} />
                    {m.last_refresh_error ? <p class="error small">{m.last_refresh_error}</p> : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
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
  const [newCommunity, setNewCommunity] = useState("");
  const [newTitle, setNewTitle] = useState("");
  const [error, setError] = useState<Error | null>(null);
  return (
    <div class="forms">
      <form
        class="card"
        aria-label="New module"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(null);
          try {
            const m = await ok(api.POST("/v1/modules", { body: { name, type, community_id: communityId || null } }));
            navigate(`/modules/${m.id}`);
          } catch (err) {
            setError(err as Error);
          }
        }}
      >
        <h2>New module</h2>
        <label>
          Name <input name="module-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Type
          <select name="module-type" value={type} onChange={(e) => setType(e.currentTarget.value as (typeof TYPES)[number])}>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Community
          <select name="module-community" value={communityId} onChange={(e) => setCommunityId(e.currentTarget.value)}>
            <option value="">none</option>
            {props.communities.map((c) => (
              <option key={c.id} value={c.id}>
                {c.community} {c.title}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary">
          Create module
        </button>
        <ErrorBox error={error} />
      </form>
      <form
        class="card"
        aria-label="New community"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(null);
          try {
            const c = await ok(api.POST("/v1/communities", { body: { community: newCommunity, title: newTitle } }));
            setCommunityId(c.id);
            setNewCommunity("");
            setNewTitle("");
            props.onCommunity();
          } catch (err) {
            setError(err as Error);
          }
        }}
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
