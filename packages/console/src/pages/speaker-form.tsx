import { useState } from "preact/hooks";
import type { Schema } from "../api.js";
import { ApiFormView, Field, num, useApiForm, useValues } from "../fields.js";
import { Choice } from "../form.js";

type Speaker = Schema<"Speaker">;
const POLICY_FIELDS = [
  ["local_ip", "Local IPv4 (BGP source)", "text"],
  ["local_ipv6", "Local IPv6", "text"],
  ["local_port", "Local BGP port", "number"],
  ["local_asn", "Local ASN (when not the router's)", "number"],
  ["next_hop_ipv4", "IPv4 next hop", "text"],
  ["next_hop_ipv6", "IPv6 next hop", "text"],
] as const;
type PolicyKey = (typeof POLICY_FIELDS)[number][0];
const NUMERIC = new Set<PolicyKey>(["local_port", "local_asn"]);

export interface SpeakerBody {
  name: string;
  mode?: "remote" | "local";
  router_id: string;
  asn: number;
  policies_json: { local_ip?: string; local_ipv6?: string; local_asn?: number; local_port?: number; next_hop_ipv4?: string; next_hop_ipv6?: string };
}

/**
 * A router's fields as `POST /v1/speakers` and `PATCH /v1/speakers/{id}` take them: the browser
 * checks what the schema states (required, ranges), the API the rest (an IPv4 router id, the
 * addresses), and its errors show under the field they name.
 */
export function SpeakerForm(props: { speaker?: Speaker; submit: string; onSave: (body: SpeakerBody) => Promise<unknown>; onCancel?: () => void }) {
  const s = props.speaker;
  const form = useApiForm(s ? `speaker-${s.id}` : "new-speaker");
  const { values: v, bind } = useValues({ name: s?.name ?? "", router_id: s?.router_id ?? "", asn: s ? String(s.asn) : "" });
  const [mode, setMode] = useState<"remote" | "local">(s?.mode ?? "remote");
  const policies0 = (s?.policies_json ?? {}) as Record<string, unknown>;
  const [policies, setPolicies] = useState<Record<string, string>>(
    Object.fromEntries(POLICY_FIELDS.map(([k]) => [k, policies0[k] === undefined || policies0[k] === null ? "" : String(policies0[k])])),
  );
  const body = (): SpeakerBody => {
    const p: Record<string, string | number> = {};
    for (const [k] of POLICY_FIELDS) {
      const v = policies[k]?.trim() ?? "";
      if (v) p[k] = NUMERIC.has(k) ? Number(v) : v;
    }
    return {
      name: v.name.trim(),
      ...(s ? {} : { mode }),
      router_id: v.router_id.trim(),
      asn: num(v.asn) ?? 0,
      policies_json: p as SpeakerBody["policies_json"],
    };
  };
  return (
    <ApiFormView
      form={form}
      label={s ? `Edit router ${s.name}` : "New router"}
      submit={props.submit}
      action={() => props.onSave(body())}
      onCancel={props.onCancel}
    >
      <div class="grid">
        <Field label="Name" {...bind("name")} input={{ required: true, maxLength: 64 }} />
        {s ? null : (
          <Choice
            label="Mode"
            name="mode"
            value={mode}
            onChange={(v) => setMode(v as "remote" | "local")}
            options={[
              ["remote", "remote (an agent on the router)"],
              ["local", "local (the controller's BIRD)"],
            ]}
          />
        )}
        <Field label="Router id (IPv4)" {...bind("router_id")} input={{ required: true, placeholder: "192.0.2.1" }} />
        <Field label="ASN" {...bind("asn")} input={{ required: true, type: "number", min: 1, max: 4294967295 }} />
      </div>
      <details open={Object.values(policies).some(Boolean)}>
        <summary>BGP addresses and next hops</summary>
        <div class="grid">
          {POLICY_FIELDS.map(([k, label, type]) => (
            <Field
              key={k}
              label={label}
              name={`policies_json.${k}`}
              value={policies[k] ?? ""}
              onInput={(v) => setPolicies({ ...policies, [k]: v })}
              input={type === "number" ? { type, min: 1, max: k === "local_port" ? 65535 : 4294967295 } : {}}
            />
          ))}
        </div>
      </details>
    </ApiFormView>
  );
}
