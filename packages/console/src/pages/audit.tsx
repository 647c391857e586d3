import { useState } from "preact/hooks";
import { ok } from "../api.js";
import { useSession } from "../session.js";
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
  const select = (label: string, value: string, set: (v: string) => void, options: readonly string[]) => (
    <label>
      {label}
      <select value={value} onChange={(e) => set(e.currentTarget.value)}>
        <option value="">any</option>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
  return (
    <Page title="Audit">
      {allowed ? null : <p class="muted">This key has no permission to read the audit journal (bgp:monitoring:read).</p>}
      <div class="filters">
        {select("Action", action, setAction, ACTIONS)}
        {select("Severity", severity, setSeverity, SEVERITIES)}
        {select("Resource", resource, setResource, RESOURCES)}
        <label>
          Since <input type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        </label>
      </div>
      <ErrorBox error={records.error} />
      <div class="scroll">
        <table data-testid="audit">
          <thead>
            <tr>
              <th>When</th>
              <th>Who</th>
              <th>Action</th>
              <th>Resource</th>
              <th>Summary</th>
            </tr>
          </thead>
          <tbody>
            {(records.data ?? []).map((r) => (
              <tr key={r.id}>
                <td>
                  <Ago at={r.at} />
                </td>
                <td>
                  {r.actor.key_prefix ?? "system"} <span class="muted">{r.actor.role ?? ""}</span>
                </td>
                <td>
                  <Badge tone={r.severity === "critical" ? "bad" : r.severity === "warning" ? "warn" : "info"}>{r.action}</Badge>
                </td>
                <td>{r.resource_type}</td>
                <td class="wrap">{r.summary}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Page>
  );
}
