import { useEffect, useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { FleetChart } from "../charts/fleet-chart.js";
import { Link } from "../router.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { ActionButton, Ago, Badge, ErrorBox, Page, ToggleButton } from "../ui.js";
import { EnrollmentPanel } from "./enrollment.js";
import { JobProgress, type JobView, watchJob } from "./job-watch.js";
import { SpeakerForm } from "./speaker-form.js";

type Speaker = Schema<"Speaker">;
const SYNC_TONE = { in_sync: "ok", out_of_sync: "warn", unknown: "info", error: "bad" } as const;

interface Outcome {
  speaker_id: string;
  status: string;
}

const columns: Column<Speaker>[] = [
  {
    header: "Speaker",
    cell: (s) => (
      <>
        <Link href={`/routers/${s.id}`}>{s.name}</Link> <span class="muted">{s.mode}</span>
      </>
    ),
  },
  { header: "Sync", cell: (s) => <Badge tone={SYNC_TONE[s.sync_status]}>{s.sync_status}</Badge> },
  {
    header: "Applied / desired",
    num: true,
    cell: (s) => (
      <>
        {s.applied_revision_id ?? "—"} / {s.desired_revision_id ?? "—"}
      </>
    ),
  },
  { header: "Agent", cell: (s) => s.agent_version ?? <span class="muted">not enrolled</span> },
  { header: "Last report", cell: (s) => <Ago at={s.last_seen_at} /> },
];

export function RoutersPage() {
  const { api, can } = useSession();
  const speakers = useItems(() => api.GET("/v1/speakers", { params: { query: { limit: 500 } } }), []);
  const [job, setJob] = useState<JobView | null>(null);
  const [adding, setAdding] = useState(false);
  const [enroll, setEnroll] = useState<{ name: string; token: string | null; expiresAt: string | null } | null>(null);
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
  const progressOf = (s: Speaker) => {
    if (!job) return null;
    const done = outcomes.get(s.id);
    if (done) return done;
    if (s.dispatch_status === "failed") return "failed";
    return s.applied_revision_id !== null && s.applied_revision_id === (target ?? s.desired_revision_id) ? "applied" : s.dispatch_status;
  };

  const thisApply: Column<Speaker> = {
    header: "This apply",
    testId: "apply-progress",
    cell: (s) => {
      const p = progressOf(s);
      return <Badge tone={p === "applied" ? "ok" : p === "failed" || p === "timeout" ? "bad" : "info"}>{p}</Badge>;
    },
  };

  return (
    <Page
      title="Routers"
      actions={
        can("operator") ? (
          <>
            <ToggleButton label="New router" open={adding} onToggle={setAdding} />
            <ActionButton
              label="Apply current revision"
              kind="primary"
              testId="apply"
              action={async () => follow((await ok(api.POST("/v1/apply", { body: { timeout_seconds: 60 } }))).job_id)}
            />
          </>
        ) : null
      }
    >
      <ErrorBox error={speakers.error} />
      {adding ? (
        <SpeakerForm
          submit="Create router"
          onCancel={() => setAdding(false)}
          onSave={async (body) => {
            const created = await ok(api.POST("/v1/speakers", { body }));
            setAdding(false);
            setEnroll({ name: created.name, token: created.enrollment_token, expiresAt: created.enrollment_token_expires_at });
            speakers.reload();
          }}
        />
      ) : null}
      {enroll?.token ? <EnrollmentPanel speakerName={enroll.name} token={enroll.token} expiresAt={enroll.expiresAt} onDone={() => setEnroll(null)} /> : null}
      {enroll && !enroll.token ? (
        <p class="card" role="status">
          Router {enroll.name} created. Its enrollment token is an admin's to issue: an admin opens the router and presses "New enrollment token".
        </p>
      ) : null}
      {job ? <JobProgress job={job} /> : null}
      {speakers.data?.length ? <FleetChart speakers={speakers.data} /> : null}
      <DataTable testId="speakers" columns={[...columns, job && thisApply]} rows={speakers.data} rowKey={(s) => s.id} />
      {speakers.data?.length === 0 ? <p class="muted">No routers yet.</p> : null}
    </Page>
  );
}
