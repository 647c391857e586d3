import { useState } from "preact/hooks";
import { type Api, ok, type Schema } from "../api.js";
import { Choice } from "../form.js";
import { Link } from "../router.js";
import { useSession } from "../session.js";
import { DataTable, type MaybeColumn, useItems } from "../table.js";
import { ActionButton, Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";

type Job = Schema<"Job">;
const TYPES = ["module_ingest", "peer_reconcile", "apply", "maintenance_policy_run", "revision_prune", "runtime_logs_cleanup"] as const;
const STATUSES = ["queued", "running", "awaiting", "succeeded", "failed", "cancelled"] as const;
const TONE: Record<string, "ok" | "warn" | "bad" | "info"> = { succeeded: "ok", failed: "bad", cancelled: "warn" };

/** The routers an apply job reports on (`result.speakers`), by name, linked. */
function routersOf(j: Job, names: Map<string, string>) {
  const speakers = (j.result as { speakers?: { speaker_id: string; status: string }[] } | null)?.speakers ?? [];
  return speakers.map((s) => (
    <span key={s.speaker_id} class="chip">
      <Link href={`/routers/${s.speaker_id}`}>{names.get(s.speaker_id) ?? s.speaker_id.slice(0, 8)}</Link> {s.status}
    </span>
  ));
}

function jobColumns(api: Api, operator: boolean, reload: () => void, names: Map<string, string>): MaybeColumn<Job>[] {
  return [
    { header: "Type", cell: (j) => j.type },
    { header: "Status", cell: (j) => <Badge tone={TONE[j.status] ?? "info"}>{j.status}</Badge> },
    { header: "Progress", cell: (j) => (j.progress ? `${j.progress.done}${j.progress.total !== null ? ` / ${j.progress.total}` : ""}` : "—") },
    { header: "Created", cell: (j) => <Ago at={j.created_at} /> },
    { header: "By", cell: (j) => j.created_by ?? "scheduler" },
    { header: "Routers", cell: (j) => routersOf(j, names) },
    { header: "Error", wrap: true, cell: (j) => (j.error ? `${j.error.code}: ${j.error.detail}` : "") },
    operator && {
      header: "Actions",
      cell: (j) =>
        ["queued", "running", "awaiting"].includes(j.status) ? (
          <ActionButton
            label="Cancel"
            kind="danger"
            action={async () => {
              await ok(api.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: j.job_id } } }));
              reload();
            }}
          />
        ) : null,
    },
  ];
}

export function JobsPage() {
  const { api, can } = useSession();
  const [type, setType] = useState("");
  const [status, setStatus] = useState("");
  const speakers = useItems(() => api.GET("/v1/speakers", { params: { query: { limit: 500 } } }), []);
  const names = new Map((speakers.data ?? []).map((s) => [s.id, s.name]));
  const jobs = useLoad(
    async () =>
      (
        await ok(
          api.GET("/v1/jobs", {
            params: {
              query: {
                limit: 100,
                ...(type ? { type: type as (typeof TYPES)[number] } : {}),
                ...(status ? { status: status as (typeof STATUSES)[number] } : {}),
              },
            },
          }),
        )
      ).items,
    [type, status],
  );
  return (
    <Page title="Jobs">
      <div class="filters">
        <Choice label="Type" value={type} onChange={setType} options={TYPES} any="any" />
        <Choice label="Status" value={status} onChange={setStatus} options={STATUSES} any="any" />
        <button type="button" onClick={jobs.reload}>
          Reload
        </button>
      </div>
      <ErrorBox error={jobs.error} />
      <DataTable testId="jobs" columns={jobColumns(api, can("operator"), jobs.reload, names)} rows={jobs.data} rowKey={(j) => j.job_id} />
    </Page>
  );
}
