import { useState } from "preact/hooks";
import { ok } from "../api.js";
import { useSession } from "../session.js";
import { ActionButton, Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";

const TYPES = ["module_ingest", "peer_reconcile", "apply", "maintenance_policy_run", "revision_prune", "runtime_logs_cleanup"] as const;
const STATUSES = ["queued", "running", "awaiting", "succeeded", "failed", "cancelled"] as const;
const TONE: Record<string, "ok" | "warn" | "bad" | "info"> = { succeeded: "ok", failed: "bad", cancelled: "warn" };

export function JobsPage() {
  const { api, can } = useSession();
  const [type, setType] = useState("");
  const [status, setStatus] = useState("");
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
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">any</option>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {STATUSES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={jobs.reload}>
          Reload
        </button>
      </div>
      <ErrorBox error={jobs.error} />
      <div class="scroll">
        <table data-testid="jobs">
          <thead>
            <tr>
              <th>Type</th>
              <th>Status</th>
              <th>Progress</th>
              <th>Created</th>
              <th>By</th>
              <th>Error</th>
              {can("operator") ? <th>Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {(jobs.data ?? []).map((j) => (
              <tr key={j.job_id}>
                <td>{j.type}</td>
                <td>
                  <Badge tone={TONE[j.status] ?? "info"}>{j.status}</Badge>
                </td>
                <td>{j.progress ? `${j.progress.done}${j.progress.total !== null ? ` / ${j.progress.total}` : ""}` : "—"}</td>
                <td>
                  <Ago at={j.created_at} />
                </td>
                <td>{j.created_by ?? "scheduler"}</td>
                <td class="wrap">{j.error ? `${j.error.code}: ${j.error.detail}` : ""}</td>
                {can("operator") ? (
                  <td>
                    {["queued", "running", "awaiting"].includes(j.status) ? (
                      <ActionButton
                        label="Cancel"
                        kind="danger"
                        action={async () => {
                          await ok(api.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: j.job_id } } }));
                          jobs.reload();
                        }}
                      />
                    ) : null}
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Page>
  );
}
