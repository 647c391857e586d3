import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { ConfirmButton } from "../confirm.js";
import { ApiFormView, Check, Field, num, useApiForm, useValues } from "../fields.js";
import { useSession } from "../session.js";
import { DataTable, type MaybeColumn, useItems } from "../table.js";
import { ActionButton, Ago, Badge, ErrorBox, Page } from "../ui.js";

type Policy = Schema<"MaintenancePolicy">;
type Action = Schema<"MaintenanceActionInput">;
const KINDS = [
  ["revision_prune", "Prune revisions past the retention", false],
  ["audit_retention", "Delete audit records older than (days)", true],
  ["jobs_retention", "Delete finished jobs older than (days)", true],
  ["runtime_logs_cleanup", "Clean runtime logs above the threshold", false],
] as const;
type Kind = (typeof KINDS)[number][0];

function PolicyForm(props: { onCreated: () => void }) {
  const { api } = useSession();
  const form = useApiForm("new-policy");
  const { values: v, bind, set } = useValues({ name: "", interval_minutes: "1440" });
  const [enabled, setEnabled] = useState(true);
  const [chosen, setChosen] = useState<Record<Kind, boolean>>({
    revision_prune: true,
    audit_retention: false,
    jobs_retention: false,
    runtime_logs_cleanup: false,
  });
  const [days, setDays] = useState<Record<string, string>>({ audit_retention: "90", jobs_retention: "30" });
  const actions = (): Action[] =>
    KINDS.filter(([k]) => chosen[k]).map(([k, , withDays]) => (withDays ? ({ type: k, days: num(days[k] ?? "") ?? 0 } as Action) : ({ type: k } as Action)));
  const create = async () => {
    await ok(
      api.POST("/v1/maintenance/policies", { body: { name: v.name.trim(), enabled, interval_minutes: num(v.interval_minutes) ?? 0, actions: actions() } }),
    );
    set("name", "");
    props.onCreated();
  };
  return (
    <ApiFormView form={form} label="New maintenance policy" submit="Create policy" action={create}>
      <div class="grid">
        <Field label="Name" {...bind("name")} input={{ required: true, maxLength: 128 }} />
        <Field label="Every (minutes, 5–43200)" {...bind("interval_minutes")} input={{ required: true, type: "number", min: 5, max: 43200 }} />
      </div>
      <Check label="Enabled" name="enabled" checked={enabled} onChange={setEnabled} />
      <fieldset class="checklist" id="new-policy-actions">
        <legend>Actions, in this order</legend>
        {KINDS.map(([k, label, withDays]) => (
          <div key={k} class="row">
            <Check
              label={withDays ? label.replace(" (days)", "") : label}
              name={`action-${k}`}
              checked={chosen[k]}
              onChange={(on) => setChosen({ ...chosen, [k]: on })}
            />
            {withDays && chosen[k] ? (
              <Field
                label="Days"
                name={`actions.${KINDS.filter(([x]) => chosen[x]).findIndex(([x]) => x === k)}.days`}
                value={days[k] ?? ""}
                onInput={(v) => setDays({ ...days, [k]: v })}
                input={{ required: true, type: "number", min: 1, max: 36500 }}
              />
            ) : null}
          </div>
        ))}
      </fieldset>
    </ApiFormView>
  );
}

function describe(a: Schema<"MaintenanceAction">): string {
  const x = a as { type: string; days?: number; threshold_bytes?: number; mode?: string };
  return x.days ? `${x.type} (${x.days} d)` : x.threshold_bytes ? `${x.type} (${x.threshold_bytes} B, ${x.mode ?? "truncate"})` : x.type;
}

/** What a dry run says each action would delete now: a count, and the ids or files. */
function DryRun({ result }: { result: Schema<"MaintenanceDryRun"> }) {
  return (
    <ul data-testid="dry-run">
      {result.actions.map((a) => {
        const w = a.would as { count?: number; available?: boolean; cutoff?: string };
        return (
          <li key={a.type}>
            {a.type}: would delete <strong>{w.count ?? 0}</strong>
            {w.available === false ? " (runtime logs are not available here)" : ""}
            {w.cutoff ? ` older than ${new Date(w.cutoff).toLocaleString()}` : ""}
          </li>
        );
      })}
    </ul>
  );
}

/** Maintenance policies (operator+): what the scheduler deletes and when; a dry run says what a run would delete now. */
export function MaintenancePage() {
  const { api, can } = useSession();
  const policies = useItems(() => api.GET("/v1/maintenance/policies", { params: { query: { limit: 200 } } }), []);
  const [dry, setDry] = useState<Record<string, Schema<"MaintenanceDryRun">>>({});
  const [ran, setRan] = useState<Record<string, string>>({});
  const columns: MaybeColumn<Policy>[] = [
    {
      header: "Policy",
      cell: (p) => (
        <>
          {p.name} {p.enabled ? null : <Badge tone="warn">disabled</Badge>}
        </>
      ),
    },
    { header: "Every", num: true, cell: (p) => `${p.interval_minutes} min` },
    { header: "Actions", wrap: true, cell: (p) => p.actions.map(describe).join(", ") },
    { header: "Last run", cell: (p) => <Ago at={p.last_run_at} /> },
    {
      header: "Dry run",
      cell: (p) =>
        dry[p.policy_id] ? (
          <DryRun result={dry[p.policy_id]!} />
        ) : (
          <ActionButton
            label="Dry run"
            action={async () =>
              setDry({
                ...dry,
                [p.policy_id]: await ok(api.POST("/v1/maintenance/policies/{policy_id}/dry-run", { params: { path: { policy_id: p.policy_id } }, body: {} })),
              })
            }
          />
        ),
    },
    can("operator") && {
      header: "Run",
      cell: (p) => (
        <span class="row">
          {ran[p.policy_id] ? (
            <span role="status">queued job {ran[p.policy_id]?.slice(0, 8)}</span>
          ) : (
            <ConfirmButton
              label="Run now"
              question={`Run ${p.name} now? It deletes what the dry run lists.`}
              action={async () => {
                const job = await ok(api.POST("/v1/maintenance/policies/{policy_id}/run", { params: { path: { policy_id: p.policy_id } }, body: {} }));
                setRan({ ...ran, [p.policy_id]: job.job_id });
              }}
            />
          )}
          <ConfirmButton
            label="Delete"
            question={`Delete policy ${p.name}?`}
            action={async () => {
              await ok(api.DELETE("/v1/maintenance/policies/{policy_id}", { params: { path: { policy_id: p.policy_id } } }));
              policies.reload();
            }}
          />
        </span>
      ),
    },
  ];
  return (
    <Page title="Maintenance">
      <ErrorBox error={policies.error} />
      {can("operator") ? <PolicyForm onCreated={policies.reload} /> : null}
      <DataTable testId="policies" loaded={Boolean(policies.data)} columns={columns} rows={policies.data} rowKey={(p) => p.policy_id} />
    </Page>
  );
}
