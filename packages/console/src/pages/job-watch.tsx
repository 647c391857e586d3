import { type Api, ok } from "../api.js";
import { Badge } from "../ui.js";

export interface JobView {
  job_id: string;
  type: string;
  status: string;
  progress: { done: number; total: number | null } | null;
  result: unknown;
  error: { code: string; detail: string } | null;
}

const FINISHED = new Set(["succeeded", "failed", "cancelled"]);

/**
 * Follows a job until it ends: the job row is where workers record progress, so this reads it
 * every 400 ms (a refresh takes seconds). Returns a function that stops following.
 */
export function watchJob(api: Api, jobId: string, onJob: (job: JobView) => void): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    try {
      const job = (await ok(api.GET("/v1/jobs/{job_id}", { params: { path: { job_id: jobId } } }))) as JobView;
      if (stopped) return;
      onJob(job);
      if (FINISHED.has(job.status)) return;
    } catch {
      // A dropped request is retried on the next tick.
    }
    if (!stopped) timer = setTimeout(tick, 400);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export function JobProgress({ job }: { job: JobView }) {
  const tone = job.status === "succeeded" ? "ok" : job.status === "failed" ? "bad" : job.status === "cancelled" ? "warn" : "info";
  const p = job.progress;
  return (
    <div class="job" data-testid="job" data-status={job.status}>
      <Badge tone={tone}>{job.status}</Badge> <code>{job.type}</code>
      {p ? (
        <>
          <progress max={p.total ?? undefined} value={p.done} aria-label="progress" />
          <span>
            {p.done}
            {p.total !== null ? ` / ${p.total}` : ""}
          </span>
        </>
      ) : null}
    </div>
  );
}
