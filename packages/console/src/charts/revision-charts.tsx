import { ok, type Schema } from "../api.js";
import { useSession } from "../session.js";
import { DataTable } from "../table.js";
import { useLoad } from "../ui.js";
import { Chart } from "./chart.js";

type Revision = Schema<"Revision">;

/** The guard's default when the setting is absent (as the controller's ingest reads it). */
const GUARD_DEFAULT_PERCENT = 50;

/**
 * Prefixes per revision over time, IPv4 and IPv6 and their total, with the guard's line: a
 * refresh that withdraws more than `revision_guard_max_drop_percent` of the current revision's
 * prefixes needs force, so the line is the fewest prefixes a refresh that only withdraws may
 * leave. The table beside it holds the same numbers.
 */
export function RevisionsOverTime({ revisions }: { revisions: Revision[] }) {
  const { api } = useSession();
  const settings = useLoad(() => ok(api.GET("/v1/settings", {})), []);
  const s = settings.data?.settings as { revision_guard_max_drop_percent?: number } | undefined;
  const percent = typeof s?.revision_guard_max_drop_percent === "number" ? s.revision_guard_max_drop_percent : GUARD_DEFAULT_PERCENT;
  const rows = [...revisions].sort((a, b) => a.revision_id - b.revision_id);
  const current = rows.find((r) => r.is_current);
  const total = current ? current.prefix_count_v4 + current.prefix_count_v6 : 0;
  const floor = total - Math.floor((total * percent) / 100);
  if (rows.length === 0) return null;
  return (
    <section class="picture" aria-labelledby="revisions-over-time">
      <h2 id="revisions-over-time">Prefixes per revision</h2>
      <Chart
        label={`Prefixes per revision over time: ${rows.length} revisions; the current one has ${total}. The table beside lists them.`}
        kind="lines"
        testId="chart-revisions"
        x={rows.map((r) => Math.floor(Date.parse(r.created_at) / 1000))}
        series={[
          { label: "IPv4", values: rows.map((r) => r.prefix_count_v4), color: "--accent" },
          { label: "IPv6", values: rows.map((r) => r.prefix_count_v6), color: "--ok" },
          { label: "total", values: rows.map((r) => r.prefix_count_v4 + r.prefix_count_v6), color: "--text" },
          { label: `guard (${percent}% withdrawn)`, values: rows.map(() => floor), color: "--bad", dash: true },
        ]}
      />
      <details class="numbers" open>
        <summary>The numbers</summary>
        <DataTable
          testId="revisions-numbers"
          caption={
            <span class="muted">
              Guard: a refresh may withdraw up to {percent}% of the current revision's prefixes without force (it may leave no fewer than {floor}).
            </span>
          }
          columns={[
            { header: "Revision", cell: (r) => r.revision_id },
            { header: "When", cell: (r) => new Date(r.created_at).toLocaleString() },
            { header: "IPv4", num: true, cell: (r) => r.prefix_count_v4 },
            { header: "IPv6", num: true, cell: (r) => r.prefix_count_v6 },
            { header: "Total", num: true, cell: (r) => r.prefix_count_v4 + r.prefix_count_v6 },
          ]}
          rows={rows}
          rowKey={(r) => r.revision_id}
          rowAttrs={(r) => ({ "data-revision": r.revision_id })}
        />
      </details>
    </section>
  );
}

/** Prefixes per community of the current revision, as its speakers receive them (the preview's counts). */
export function PrefixesPerCommunity({ revisionId }: { revisionId: number }) {
  const { api } = useSession();
  const preview = useLoad(() => ok(api.GET("/v1/revisions/{revision_id}/preview", { params: { path: { revision_id: revisionId } } })), [revisionId]);
  const groups = preview.data?.by_community ?? [];
  if (groups.length === 0) return null;
  const name = (g: (typeof groups)[number]) => `${g.community ?? "none"}${g.title ? ` ${g.title}` : ""}`;
  return (
    <section class="picture" aria-labelledby="per-community">
      <h2 id="per-community">Prefixes per community (revision {revisionId})</h2>
      <Chart
        label={`Prefixes per community of revision ${revisionId}: ${groups.map((g) => `${name(g)} ${g.prefix_count}`).join(", ")}.`}
        kind="bars"
        testId="chart-communities"
        x={groups.map((_, i) => i)}
        xLabels={groups.map((g) => g.community ?? "none")}
        series={[{ label: "prefixes", values: groups.map((g) => g.prefix_count), color: "--accent" }]}
      />
      <DataTable
        testId="communities-numbers"
        columns={[
          { header: "Community", cell: name },
          { header: "Prefixes", num: true, cell: (g) => g.prefix_count },
        ]}
        rows={groups}
        rowKey={name}
      />
    </section>
  );
}
