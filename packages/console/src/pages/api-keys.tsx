import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { ConfirmButton } from "../confirm.js";
import { ApiFormView, Field, useApiForm, useValues } from "../fields.js";
import { Choice } from "../form.js";
import { Link } from "../router.js";
import { storeKey, useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { Ago, Badge, ErrorBox, Page } from "../ui.js";
import { SecretOnce } from "./secret.js";

type ApiKey = Schema<"ApiKey">;
const ROLES = ["viewer", "operator", "admin", "superadmin"] as const;
const RANK: Record<string, number> = { node: 0, viewer: 1, operator: 2, admin: 3, superadmin: 4 };

function NewKeyForm(props: { onCreated: (k: Schema<"ApiKeyWithSecret">) => void }) {
  const { api, info } = useSession();
  const form = useApiForm("new-key");
  const { values: v, bind, set } = useValues({ name: "", expires_at: "" });
  const [role, setRole] = useState<(typeof ROLES)[number]>("viewer");
  const roles = ROLES.filter((r) => RANK[r]! <= RANK[info.role]!);
  const create = async () => {
    const body = { name: v.name.trim(), role, ...(v.expires_at ? { expires_at: new Date(v.expires_at).toISOString() } : {}) };
    props.onCreated(await ok(api.POST("/v1/api-keys", { body })));
    set("name", "");
  };
  return (
    <ApiFormView form={form} label="New API key" submit="Create key" action={create}>
      <div class="grid">
        <Field label="Name" {...bind("name")} input={{ required: true, maxLength: 128 }} />
        <Choice label="Role (up to your own)" name="role" value={role} onChange={(v) => setRole(v as typeof role)} options={roles} />
        <Field label="Expires (optional)" {...bind("expires_at")} input={{ type: "datetime-local" }} />
      </div>
    </ApiFormView>
  );
}

/**
 * The tenant's API keys (operator+): create with the secret shown once, rotate, revoke, and
 * when each was last used. A key rotates itself and keys of a lower role; the buttons follow.
 */
export function ApiKeysPage() {
  const { api, info } = useSession();
  const keys = useItems(() => api.GET("/v1/api-keys", { params: { query: { limit: 500 } } }), []);
  const [secret, setSecret] = useState<{ title: string; secret: string; mine: boolean } | null>(null);
  const canTouch = (k: ApiKey) => !k.revoked_at && (k.id === info.key_id || RANK[k.role]! < RANK[info.role]!);
  const columns: Column<ApiKey>[] = [
    {
      header: "Name",
      cell: (k) => (
        <>
          {k.name} {k.id === info.key_id ? <Badge tone="info">this session</Badge> : null}
          {k.speaker_id ? (
            <>
              {" "}
              <Link href={`/routers/${k.speaker_id}`}>router</Link>
            </>
          ) : null}
        </>
      ),
    },
    { header: "Role", cell: (k) => k.role },
    { header: "Prefix", cell: (k) => <code>{k.key_prefix}</code> },
    { header: "Last used", testId: "key-last-used", cell: (k) => <Ago at={k.last_used_at} /> },
    { header: "Expires", cell: (k) => (k.expires_at ? new Date(k.expires_at).toLocaleString() : <span class="muted">never</span>) },
    { header: "State", cell: (k) => (k.revoked_at ? <Badge tone="bad">revoked</Badge> : <Badge tone="ok">active</Badge>) },
    {
      header: "Actions",
      cell: (k) =>
        canTouch(k) ? (
          <span class="row">
            <ConfirmButton
              label="Rotate"
              question={`Rotate ${k.name}? Its old secret stops working now.`}
              action={async () => {
                const r = await ok(api.POST("/v1/api-keys/{id}/rotate", { params: { path: { id: k.id } }, body: {} }));
                const mine = k.id === info.key_id;
                // The old secret is dead: this tab signs in with the new one from now on.
                if (mine) storeKey(r.secret, info);
                setSecret({ title: `New secret of ${k.name}`, secret: r.secret, mine });
                if (!mine) keys.reload();
              }}
            />
            {k.id === info.key_id ? null : (
              <ConfirmButton
                label="Revoke"
                question={`Revoke ${k.name}?`}
                action={async () => {
                  await ok(api.DELETE("/v1/api-keys/{id}", { params: { path: { id: k.id } } }));
                  keys.reload();
                }}
              />
            )}
          </span>
        ) : null,
    },
  ];
  return (
    <Page title="API keys">
      <ErrorBox error={keys.error} />
      {secret ? (
        <SecretOnce
          title={secret.title}
          secret={secret.secret}
          note={secret.mine ? "This session now signs in with it." : "Give it to whoever uses the key."}
          onDone={() => (secret.mine ? window.location.reload() : setSecret(null))}
        />
      ) : null}
      <NewKeyForm
        onCreated={(k) => {
          setSecret({ title: `Secret of ${k.name}`, secret: k.secret, mine: false });
          keys.reload();
        }}
      />
      <DataTable
        testId="api-keys"
        loaded={Boolean(keys.data)}
        columns={columns}
        rows={keys.data}
        rowKey={(k) => k.id}
        rowAttrs={(k) => ({ "data-key": k.name })}
      />
    </Page>
  );
}
