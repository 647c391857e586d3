import { useState } from "preact/hooks";
import type { Schema } from "../api.js";
import { ApiFormView, Check, CheckList, Field, num, useApiForm, useValues } from "../fields.js";

type Peer = Schema<"Peer">;

export interface PeerBody {
  name: string;
  neighbor_address: string;
  neighbor_port?: number;
  remote_asn: number;
  local_asn?: number | null;
  description: string;
  enabled: boolean;
  password?: string | null;
  multihop: boolean | number;
  address_families: ("ipv4" | "ipv6")[];
  export_community_ids: string[];
  speaker_ids: string[];
}

/**
 * A peer's fields as `POST /v1/peers` and `PATCH /v1/peers/{id}` take them. The password is
 * write-only: the form never shows it, an empty box keeps the stored one, "Remove the password"
 * sends `password: null`.
 */
export function PeerForm(props: {
  peer?: Peer;
  speakers: Schema<"Speaker">[];
  communities: Schema<"Community">[];
  submit: string;
  onSave: (body: PeerBody) => Promise<unknown>;
  onCancel?: () => void;
}) {
  const p = props.peer;
  const form = useApiForm(p ? `peer-${p.id}` : "new-peer");
  const { values: v, bind } = useValues({
    name: p?.name ?? "",
    neighbor_address: p?.neighbor_address ?? "",
    neighbor_port: p ? String(p.neighbor_port) : "",
    remote_asn: p ? String(p.remote_asn) : "",
    local_asn: p?.local_asn ? String(p.local_asn) : "",
    description: p?.description ?? "",
    password: "",
    multihop: p ? String(p.multihop === true ? "yes" : p.multihop === false ? "" : p.multihop) : "",
  });
  const [enabled, setEnabled] = useState(p?.enabled ?? true);
  const [dropPassword, setDropPassword] = useState(false);
  const [families, setFamilies] = useState<string[]>(p?.address_families ?? ["ipv4", "ipv6"]);
  const [communities, setCommunities] = useState<string[]>(p?.export_community_ids ?? []);
  const [speakers, setSpeakers] = useState<string[]>(p?.speaker_ids ?? []);

  const body = (): PeerBody => ({
    name: v.name.trim(),
    neighbor_address: v.neighbor_address.trim(),
    ...(v.neighbor_port.trim() ? { neighbor_port: num(v.neighbor_port) } : {}),
    remote_asn: num(v.remote_asn) ?? 0,
    local_asn: num(v.local_asn) ?? null,
    description: v.description,
    enabled,
    ...(dropPassword ? { password: null } : v.password ? { password: v.password } : {}),
    multihop: v.multihop === "yes" ? true : v.multihop.trim() === "" ? false : Number(v.multihop),
    address_families: families as ("ipv4" | "ipv6")[],
    export_community_ids: communities,
    speaker_ids: speakers,
  });

  return (
    <ApiFormView form={form} label={p ? `Edit peer ${p.name}` : "New peer"} submit={props.submit} action={() => props.onSave(body())} onCancel={props.onCancel}>
      <div class="grid">
        <Field label="Name" {...bind("name")} input={{ required: true, maxLength: 64 }} />
        <Field label="Neighbor address" {...bind("neighbor_address")} input={{ required: true, placeholder: "192.0.2.2" }} />
        <Field label="Neighbor port" {...bind("neighbor_port")} input={{ type: "number", min: 1, max: 65535, placeholder: "179" }} />
        <Field label="Remote ASN" {...bind("remote_asn")} input={{ required: true, type: "number", min: 1, max: 4294967295 }} />
        <Field label="Local ASN (default: the router's)" {...bind("local_asn")} input={{ type: "number", min: 1, max: 4294967295 }} />
        <Field label="Multihop (empty: direct; 'yes' or a TTL)" {...bind("multihop")} input={{ pattern: "yes|[0-9]{1,3}", placeholder: "yes" }} />
        <Field
          label={p?.password_set ? "New TCP-MD5 password (a password is set; empty keeps it)" : "TCP-MD5 password (optional)"}
          {...bind("password")}
          input={{ type: "password", maxLength: 80, autoComplete: "new-password", disabled: dropPassword }}
        />
        <Field label="Description" {...bind("description")} input={{ maxLength: 512 }} />
      </div>
      <div class="row">
        <Check label="Enabled" name="enabled" checked={enabled} onChange={setEnabled} />
        {p?.password_set ? <Check label="Remove the password" name="drop-password" checked={dropPassword} onChange={setDropPassword} /> : null}
      </div>
      <CheckList
        legend="Address families"
        name="address_families"
        options={[
          ["ipv4", "IPv4"],
          ["ipv6", "IPv6"],
        ]}
        value={families}
        onChange={setFamilies}
      />
      <CheckList
        legend="Routers that carry it"
        name="speaker_ids"
        options={props.speakers.map((s) => [s.id, s.name])}
        value={speakers}
        onChange={setSpeakers}
      />
      <CheckList
        legend="Export only these communities (none: all)"
        name="export_community_ids"
        options={props.communities.map((c) => [c.id, `${c.community} ${c.title}`.trim()])}
        value={communities}
        onChange={setCommunities}
      />
    </ApiFormView>
  );
}
