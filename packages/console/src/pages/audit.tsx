import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { Choice } from "../form.js";
import { useSession } from "../session.js";
import { type Column, DataTable } from "../table.js";
import { Ago, Badge, ErrorBox, Page, useLoad } from "../ui.js";

const ACTIONS = ["create", "update", "delete", "rotate", "revoke", "apply", "rollback", "run", "cancel"] as const;
const SEVERITIES = ["info", "warning", "critical"] as const;
const RESOURCES = [
  "module",
  "ip_range_entry",
  "as_entry",
  "domain_entry",
  "cdn_source",
  "community",
  "revision",
  "speaker",
  "peer",
  "job",
  "settings",
  "api_key",
] as const;

type Query = {
  limit: number;
  action?: (typeof ACTIONS)[number];
  severity?: (typeof SEVERITIES)[number];
  resource_type?: (typeof RESOURCES)[number];
  since?: string;
};

const columns: Column<Schema<"AuditRecord">>[] = [
  { header: "When", cell: (r) => <Ago at={r.at} /> },
  {
    header: "Who",
    cell: (r) => (
      <>
        {r.actor.key_prefix ?? "system"} <span class="muted">{r.actor.role ?? ""}</span>
      </>
    ),
  },
  { header: "Action", cell: (r) => <Badge tone={r.severity === "critical" ? "bad" : r.severity === "warning" ? "warn" : "info"}>{r.action}</Badge> },
  { header: "Resource", cell: (r) => r.resource_type },
  { header: "Summary", wrap: true, cell: (r) => r.summary },
];

export function AuditPage() {
  const { api, info } = useSession();
  const [action, setAction] = useState("");
  const [severity, setSeverity] = useState("");
  const [resource, setResource] = useState("");
  const [since, setSince] = useState("");
  const allowed = info.permissions.includes("bgp:monitoring:read");
  const records = useLoad(async () => {
    if (!allowed) return [];
    const query: Query = { limit: 100 };
    if (action) query.action = action as Query["action"];
    if (severity) query.severity = severity as Query["severity"];
    if (resource) query.resource_type = resource as Query["resource_type"];
    if (since) query.since = new Date(since).toISOString();
    return (await ok(api.GET("/v1/audit", { params: { query } }))).items;
  }, [action, severity, resource, since]);
  return (
    <Page title="Audit">
      {allowed ? null : <p class="muted">This key has no permission to read the audit journal (bgp:monitoring:read).</p>}
      <div class="filters">
        <Choice label="Action" value={action} onChange={setAction} options={ACTIONS} any="any" />
        <Choice label="Severity" value={severity} onChange={setSeverity} options={SEVERITIES} any="any" />
        <Choice label="Resource" value={resource} onChange={setResource} options={RESOURCES} any="any" />
        <label>
          Since <input type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        </label>
      </div>
      <ErrorBox error={records.error} />
      <DataTable testId="audit" columns={columns} rows={records.data} rowKey={(r) => r.id} />
    </Page>
  );
}
