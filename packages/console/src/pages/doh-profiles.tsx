import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { useListEditing } from "../editing.js";
import { ApiFormView, Field, num, useApiForm, useValues } from "../fields.js";
import { Choice } from "../form.js";
import { useSession } from "../session.js";
import { DataTable, type MaybeColumn, useItems } from "../table.js";
import { ErrorBox, Page } from "../ui.js";

type Profile = Schema<"DohProfile">;
interface ProfileBody {
  name: string | null;
  url: string;
  method: "GET" | "POST";
  format: "wire" | "json";
  timeout_ms?: number;
}

function ProfileForm(props: { profile?: Profile | undefined; onSave: (body: ProfileBody) => Promise<unknown>; onCancel?: (() => void) | undefined }) {
  const p = props.profile;
  const form = useApiForm(p ? `doh-${p.id}` : "new-doh");
  const { values: v, bind } = useValues({ name: p?.name ?? "", url: p?.url ?? "", timeout_ms: p ? String(p.timeout_ms) : "" });
  const [method, setMethod] = useState<ProfileBody["method"]>(p?.method ?? "GET");
  const [format, setFormat] = useState<ProfileBody["format"]>(p?.format ?? "wire");
  return (
    <ApiFormView
      form={form}
      label={p ? `Edit DoH profile ${p.name ?? p.url}` : "New DoH profile"}
      submit={p ? "Save profile" : "Create profile"}
      action={() =>
        props.onSave({ name: v.name.trim() || null, url: v.url.trim(), method, format, ...(v.timeout_ms ? { timeout_ms: num(v.timeout_ms) } : {}) })
      }
      onCancel={props.onCancel}
    >
      <div class="grid">
        <Field label="Name" {...bind("name")} input={{ maxLength: 64 }} />
        <Field label="URL (https)" {...bind("url")} input={{ required: true, type: "url", maxLength: 2048, placeholder: "https://dns.example/dns-query" }} />
        <Choice label="Method" name="method" value={method} onChange={(v) => setMethod(v as ProfileBody["method"])} options={["GET", "POST"]} />
        <Choice
          label="Format"
          name="format"
          value={format}
          onChange={(v) => setFormat(v as ProfileBody["format"])}
          options={[
            ["wire", "wire (RFC 8484)"],
            ["json", "json (dns-json)"],
          ]}
        />
        <Field label="Timeout (ms)" {...bind("timeout_ms")} input={{ type: "number", min: 100, max: 30000, placeholder: "3000" }} />
      </div>
    </ApiFormView>
  );
}

/** The resolvers DOMAINS modules ask over DNS-over-HTTPS (operator+ writes). */
export function DohProfilesPage() {
  const { api, can } = useSession();
  const profiles = useItems(() => api.GET("/v1/doh-profiles", { params: { query: { limit: 500 } } }), []);
  const edit = useListEditing({
    list: profiles,
    create: (body: ProfileBody) => ok(api.POST("/v1/doh-profiles", { body })),
    update: (id, body) => ok(api.PATCH("/v1/doh-profiles/{id}", { params: { path: { id } }, body })),
    remove: (id) => ok(api.DELETE("/v1/doh-profiles/{id}", { params: { path: { id } } })),
  });
  const columns: MaybeColumn<Profile>[] = [
    { header: "Name", cell: (p) => p.name ?? <span class="muted">unnamed</span> },
    { header: "URL", wrap: true, cell: (p) => <code>{p.url}</code> },
    { header: "Method", cell: (p) => p.method },
    { header: "Format", cell: (p) => p.format },
    { header: "Timeout", num: true, cell: (p) => `${p.timeout_ms} ms` },
    can("operator") && edit.actions((p) => `Delete DoH profile ${p.name ?? p.url}?`),
  ];
  return (
    <Page title="DoH profiles">
      <ErrorBox error={profiles.error} />
      {edit.current || can("operator") ? <ProfileForm key={edit.current?.id} profile={edit.current} onCancel={edit.cancel} onSave={edit.save} /> : null}
      <DataTable testId="doh-profiles" loaded={Boolean(profiles.data)} columns={columns} rows={profiles.data} rowKey={(p) => p.id} />
    </Page>
  );
}
