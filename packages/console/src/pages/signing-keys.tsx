import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { ConfirmButton } from "../confirm.js";
import { useSession } from "../session.js";
import { type Column, DataTable } from "../table.js";
import { Badge, ErrorBox, Page, useLoad } from "../ui.js";

type Key = Schema<"SigningKey">;

const columns: Column<Key>[] = [
  { header: "Key id", testId: "signing-key-id", cell: (k) => <code>{k.key_id}</code> },
  { header: "State", testId: "signing-key-status", cell: (k) => <Badge tone={k.status === "active" ? "ok" : "info"}>{k.status}</Badge> },
  { header: "Public key (Ed25519)", wrap: true, cell: (k) => <code>{k.public_key}</code> },
  { header: "Created", cell: (k) => new Date(k.created_at).toLocaleString() },
  { header: "Rotation statement", cell: (k) => (k.statement ? "signed by the old and the new key" : "—") },
];

/**
 * The keys that sign this tenant's bundles. Rotating (admin+) makes a new active key with a
 * statement the old one signs, so enrolled agents follow it; the old key stays listed, retired.
 */
export function SigningKeysPage() {
  const { api, can } = useSession();
  const keys = useLoad(async () => (await ok(api.GET("/v1/nodes/signing-keys", {}))).keys, []);
  const [rotated, setRotated] = useState<string | null>(null);
  return (
    <Page
      title="Signing keys"
      actions={
        can("admin") ? (
          <ConfirmButton
            label="Rotate"
            question="Rotate the bundle signing key? Agents follow through the signed statement."
            testId="rotate-signing-key"
            action={async () => {
              const k = await ok(api.POST("/v1/nodes/signing-keys/rotate", {}));
              setRotated(k.key_id);
              keys.reload();
            }}
          />
        ) : null
      }
    >
      <ErrorBox error={keys.error} />
      {rotated ? (
        <p class="card" role="status">
          New active key <code>{rotated}</code>.
        </p>
      ) : null}
      <DataTable testId="signing-keys" loaded={Boolean(keys.data)} columns={columns} rows={keys.data} rowKey={(k) => k.key_id} />
    </Page>
  );
}
