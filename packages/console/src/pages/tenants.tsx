import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { ApiFormView, Field, useApiForm } from "../fields.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { ErrorBox, Page } from "../ui.js";
import { SecretOnce } from "./secret.js";

const columns: Column<Schema<"Tenant">>[] = [
  { header: "Tenant", cell: (t) => t.name },
  { header: "Created", cell: (t) => new Date(t.created_at).toLocaleString() },
];

/** The deployment's tenants: only tenant `default`'s superadmins see this page (the API's rule). */
export function TenantsPage() {
  const { api } = useSession();
  const tenants = useItems(() => api.GET("/v1/tenants", { params: { query: { limit: 500 } } }), []);
  const form = useApiForm("new-tenant");
  const [name, setName] = useState("");
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  return (
    <Page title="Tenants">
      <ErrorBox error={tenants.error} />
      {secret ? <SecretOnce title={`First admin key of ${secret.name}`} secret={secret.secret} onDone={() => setSecret(null)} /> : null}
      <ApiFormView
        form={form}
        label="New tenant"
        submit="Create tenant"
        action={async () => {
          const created = await ok(api.POST("/v1/tenants", { body: { name: name.trim() } }));
          setSecret({ name: created.name, secret: created.admin_key.secret });
          setName("");
          tenants.reload();
        }}
      >
        <Field
          label="Name"
          name="name"
          value={name}
          onInput={setName}
          input={{ required: true, pattern: "[a-z0-9][a-z0-9\\-]{0,62}", placeholder: "customer-a" }}
        />
      </ApiFormView>
      <DataTable testId="tenants" loaded={Boolean(tenants.data)} columns={columns} rows={tenants.data} rowKey={(t) => t.tenant_id} />
    </Page>
  );
}
