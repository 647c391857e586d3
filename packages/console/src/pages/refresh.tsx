import { useEffect, useState } from "preact/hooks";
import { type Api, ok } from "../api.js";
import { navigate } from "../router.js";
import { useSession } from "../session.js";
import { ActionButton, ErrorBox, Page, useLoad } from "../ui.js";
import { JobProgress, type JobView, watchJob } from "./job-watch.js";

async function currentRevision(api: Api): Promise<number> {
  const page = await ok(api.GET("/v1/revisions", { params: { query: { limit: 1 } } }));
  return page.items.find((r) => r.is_current)?.revision_id ?? page.items[0]?.revision_id ?? 0;
}

export function RefreshPage() {
  const { api, can } = useSession();
  const before = useLoad(() => currentRevision(api), []);
  const [job, setJob] = useState<JobView | null>(null);
  const [from, setFrom] = useState(0);
  const [stop, setStop] = useState<(() => void) | null>(null);
  useEffect(() => () => stop?.(), [stop]);

  async function start(force: boolean) {
    const prev = await currentRevision(api);
    setFrom(prev);
    const accepted = await ok(api.POST("/v1/modules/refresh", { body: { force } }));
    const jobId = (accepted as { job_id: string }).job_id;
    setStop(() =>
      watchJob(api, jobId, (j) => {
        setJob(j);
        const revision = (j.result as { revision_id?: number | null } | null)?.revision_id;
        const unchanged = (j.result as { unchanged?: boolean } | null)?.unchanged;
        if (j.status === "succeeded" && revision && !unchanged) navigate(`/revisions/${prev}/diff/${revision}`);
      }),
    );
  }

  const tripped = job?.status === "failed" && job.error?.code === "revision_guard_tripped";
  const unchanged = job?.status === "succeeded" && (job.result as { unchanged?: boolean } | null)?.unchanged;
  return (
    <Page title="Refresh">
      <p>
        Collects every enabled module afresh and builds a revision; the diff against revision <strong>{before.data ?? "…"}</strong> opens when it is done.
      </p>
      {can("operator") ? (
        <ActionButton label="Refresh all modules" kind="primary" busyLabel="Starting…" testId="refresh" action={() => start(false)} />
      ) : (
        <p class="muted">Refreshing needs an operator key.</p>
      )}
      {job ? <JobProgress job={job} /> : null}
      {unchanged ? <p data-testid="refresh-unchanged">Nothing changed: revision {from} stays current.</p> : null}
      {tripped ? (
        <div class="card warn" role="alert" data-testid="guard">
          <h2>The withdrawal guard stopped this refresh</h2>
          <p>{job?.error?.detail}</p>
          {can("operator") ? <ActionButton label="Force the refresh" kind="danger" action={() => start(true)} /> : null}
        </div>
      ) : job?.status === "failed" ? (
        <ErrorBox error={new Error(`${job.error?.code}: ${job.error?.detail}`)} />
      ) : null}
    </Page>
  );
}
