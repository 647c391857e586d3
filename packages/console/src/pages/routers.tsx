import { useEffect, useState } from "preact/hooks";
import { ok } from "../api.js";
import { Link } from "../router.js";
import { useSession } from "../session.js";
import { ActionButton, Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";
import { JobProgress, type JobView, watchJob } from "./job-watch.js";

const SYNC_TONE = { in_sync: "ok", out_of_sync: "warn", unknown: "info", error: "bad" } as const;

interface Outcome {
  speaker_id: string;
  status: string;
}

export function RoutersPage() {
  const { api, can } = useSession();
  const speakers = useLoad(async () => (await ok(api.GET("/v1/speakers", { params: { query: { limit: 500 } } }))).items, []);
  const [job, setJob] = useState<JobView | null>(null);
  const [stop, setStop] = useState<(() => void) | null>(null);
  useEffect(() => () => stop?.(), [stop]);
  // An apply started elsewhere (a rollback with apply) is followed here: /routers?job=<id>.
  useEffect(() => {
    const id = new URLSearchParams(window.location.search).get("job");
    if (id) follow(id);
  }, []);

  function follow(jobId: string) {
    setStop(() =>
      watchJob(api, jobId, (j) => {
        setJob(j);
        speakers.reload();
      }),
    );
  }

  const target = (job?.result as { revision_id?: number } | null)?.revision_id;
  const outcomes = new Map(((job?.result as { speakers?: Outcome[] } | null)?.speakers ?? []).map((o) => [o.speaker_id, o.status]));
  const progressOf = (s: { id: string; applied_revision_id: number | null; desired_revision_id: number | null; dispatch_status: string }) => {
    if (!job) return null;
    const done = outcomes.get(s.id);
    if (done) return done;
    if (s.dispatch_status === "failed") return "failed";
    return s.applied_revision_id !== null && s.applied_revision_id === (target ?? s.desired_revision_id) ? "applied" : s.dispatch_status;
  };

  return (
    <Page
      title="Routers"
      actions={
        can("operator") ? (
          <ActionButton
            label="Apply current revision"
            kind="primary"
            testId="apply"
            action={async () => follow((await ok(api.POST("/v1/apply", { body: { timeout_seconds: 60 } }))).job_id)}
          />
        ) : null
      }
    >
      <ErrorBox error={speakers.error} />
      {job ? <JobProgress job={job} /> : null}
      <div class="scroll">
        <table data-testid="speakers">
          <thead>
            <tr>
              <th>Speaker</th>
              <th>Sync</th>
              <th class="num">Applied / desired</th>
              <th>Agent</th>
              <th>Last report</th>
              {job ? <th>This apply</th> : null}
            </tr>
          </thead>
          <tbody>
            {(speakers.data ?? []).map((s) => {
              const p = progressOf(s);
              return (
                <tr key={s.id}>
                  <td>
                    <Link href={`/routers/${s.id}`}>{s.name}</Link> <span class="muted">{s.mode}</span>
                  </td>
                  <td>
                    <Badge tone={SYNC_TONE[s.sync_status]}>{s.sync_status}</Badge>
                  </td>
                  <td class="num">
                    {s.applied_revision_id ?? "—"} / {s.desired_revision_id ?? "—"}
                  </td>
                  <td>{s.agent_version ?? <span class="muted">not enrolled</span>}</td>
                  <td>
                    <Ago at={s.last_seen_at} />
                  </td>
                  {job ? (
                    <td data-testid="apply-progress">
                      <Badge tone={p === "applied" ? "ok" : p === "failed" || p === "timeout" ? "bad" : "info"}>{p}</Badge>
                    </td>
                  ) : null}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {speakers.data?.length === 0 ? <p class="muted">No speakers yet: create one with the API or rlctl and enroll its agent.</p> : null}
    </Page>
  );
}
