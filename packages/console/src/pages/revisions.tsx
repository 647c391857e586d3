import { type Api, ok, type Schema } from "../api.js";
import { PrefixesPerCommunity, RevisionsOverTime } from "../charts/revision-charts.js";
import { Link, navigate } from "../router.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { ActionButton, Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";
import { type DiffData, DiffView } from "./diff.js";

interface RevisionModule {
  community: string | null;
  prefix_count: number;
}

/** Prefix counts per community, added up over the revision's modules. */
function perCommunity(modules: RevisionModule[]): [string, number][] {
  const out = new Map<string, number>();
  for (const m of modules) out.set(m.community ?? "none", (out.get(m.community ?? "none") ?? 0) + m.prefix_count);
  return [...out].sort(([a], [b]) => (a < b ? -1 : 1));
}

function revisionColumns(api: Api, operator: boolean): Column<Schema<"Revision">>[] {
  return [
    {
      header: "#",
      cell: (r) => (
        <>
          {r.revision_id} {r.is_current ? <Badge tone="ok">current</Badge> : null}
        </>
      ),
    },
    { header: "When", cell: (r) => <Ago at={r.created_at} /> },
    {
      header: "Who / why",
      cell: (r) => (
        <>
          {r.created_by ?? "scheduler"} · {r.reason}
          {r.rolled_back_from ? ` of #${r.rolled_back_from}` : ""}
        </>
      ),
    },
    { header: "Digest", cell: (r) => <code title={r.digest}>{r.digest.replace(/^sha256:/, "").slice(0, 12)}</code> },
    {
      header: "Per community",
      cell: (r) =>
        perCommunity(r.modules).map(([c, n]) => (
          <span key={c} class="chip">
            {c}: {n}
          </span>
        )),
    },
    {
      header: "Modules",
      cell: (r) =>
        r.modules.map((m) => (
          <span key={m.module_id} class="chip">
            <Link href={`/modules/${m.module_id}`}>{m.name}</Link>
          </span>
        )),
    },
    {
      header: "v4 / v6",
      num: true,
      cell: (r) => (
        <>
          {r.prefix_count_v4} / {r.prefix_count_v6}
        </>
      ),
    },
    {
      header: "Actions",
      cell: (r) => (
        <>
          <Link href={`/revisions/${Math.max(0, r.revision_id - 1)}/diff/${r.revision_id}`}>Diff</Link>
          {operator && !r.is_current ? <Rollback api={api} id={r.revision_id} /> : null}
        </>
      ),
    },
  ];
}

export function RevisionsPage() {
  const { api, can } = useSession();
  const list = useItems(() => api.GET("/v1/revisions", { params: { query: { limit: 100 } } }), []);
  const current = list.data?.find((r) => r.is_current);
  return (
    <Page title="Revisions">
      <ErrorBox error={list.error} />
      <div class="pictures">
        {list.data ? <RevisionsOverTime revisions={list.data} /> : null}
        {current ? <PrefixesPerCommunity revisionId={current.revision_id} /> : null}
      </div>
      <DataTable
        testId="revisions"
        columns={revisionColumns(api, can("operator"))}
        rows={list.data}
        rowKey={(r) => r.revision_id}
        rowAttrs={(r) => ({ "data-revision": r.revision_id })}
      />
    </Page>
  );
}

function Rollback({ api, id }: { api: Api; id: number }) {
  return (
    <>
      <ActionButton
        label="Roll back"
        action={async () => {
          const r = await ok(api.POST("/v1/revisions/{revision_id}/rollback", { params: { path: { revision_id: id } }, body: { apply: false } }));
          navigate(`/revisions/${r.revision_id - 1}/diff/${r.revision_id}`);
        }}
      />
      <ActionButton
        label="Roll back + apply"
        kind="primary"
        action={async () => {
          const r = await ok(api.POST("/v1/revisions/{revision_id}/rollback", { params: { path: { revision_id: id } }, body: { apply: true } }));
          navigate(r.apply_job_id ? `/routers?job=${r.apply_job_id}` : "/routers");
        }}
      />
    </>
  );
}

/** Revision 0 does not exist: the first revision's diff is all of its prefixes, added. */
async function firstRevisionDiff(api: Api, to: number): Promise<DiffData> {
  const added: DiffData["added"] = [];
  let cursor: string | undefined;
  do {
    const page = await ok(
      api.GET("/v1/revisions/{revision_id}/prefixes", { params: { path: { revision_id: to }, query: { limit: 500, ...(cursor ? { cursor } : {}) } } }),
    );
    for (const p of page.items) added.push({ prefix: p.prefix, communities: p.communities });
    cursor = page.next_cursor ?? undefined;
  } while (cursor && added.length < 10_000);
  return { from: 0, to, added, removed: [], changed: [], added_count: added.length, removed_count: 0, changed_count: 0, truncated: Boolean(cursor) };
}

export async function loadDiff(api: Api, from: number, to: number): Promise<DiffData> {
  if (from < 1) return firstRevisionDiff(api, to);
  return ok(api.GET("/v1/revisions/{revision_a}/diff/{revision_b}", { params: { path: { revision_a: from, revision_b: to }, query: { limit: 10_000 } } }));
}

export function DiffPage({ from, to }: { from: number; to: number }) {
  const { api } = useSession();
  const diff = useLoad(() => loadDiff(api, from, to), [from, to]);
  return (
    <Page title={from < 1 ? `Revision ${to}: first revision` : `Revision ${from} → ${to}`}>
      <ErrorBox error={diff.error} />
      {diff.data ? <DiffView diff={diff.data} /> : <p class="muted">Loading…</p>}
    </Page>
  );
}
