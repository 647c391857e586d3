import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { ConfirmButton } from "../confirm.js";
import { ApiFormView, Field, useApiForm } from "../fields.js";
import { Link } from "../router.js";
import { useSession } from "../session.js";
import { DataTable, type MaybeColumn, useItems } from "../table.js";
import { ErrorBox, Page } from "../ui.js";

type Community = Schema<"Community">;

function CommunityForm(props: {
  community?: Community;
  onSave: (body: { community: string; title: string; description: string }) => Promise<unknown>;
  onCancel?: () => void;
}) {
  const c = props.community;
  const form = useApiForm(c ? `community-${c.id}` : "new-community");
  const [value, setValue] = useState(c?.community ?? "");
  const [title, setTitle] = useState(c?.title ?? "");
  const [description, setDescription] = useState(c?.description ?? "");
  return (
    <ApiFormView
      form={form}
      label={c ? `Edit community ${c.community}` : "New community"}
      submit={c ? "Save community" : "Create community"}
      action={() => props.onSave({ community: value.trim(), title, description })}
      extra={
        props.onCancel ? (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null
      }
    >
      <div class="grid">
        <Field
          label="Community (ASN:VALUE or ASN:V1:V2)"
          name="community"
          value={value}
          onInput={setValue}
          input={{ required: true, maxLength: 64, pattern: "[0-9]+:[0-9]+(:[0-9]+)?", placeholder: "65000:100" }}
        />
        <Field label="Title" name="title" value={title} onInput={setTitle} input={{ maxLength: 128 }} />
        <Field label="Description" name="description" value={description} onInput={setDescription} input={{ maxLength: 1024 }} />
      </div>
    </ApiFormView>
  );
}

/** The tenant's BGP communities, the modules that tag their prefixes with each, and their CRUD (operator+). */
export function CommunitiesPage() {
  const { api, can } = useSession();
  const communities = useItems(() => api.GET("/v1/communities", { params: { query: { limit: 500 } } }), []);
  const modules = useItems(() => api.GET("/v1/modules", { params: { query: { limit: 500 } } }), []);
  const [editing, setEditing] = useState<string | null>(null);
  const columns: MaybeColumn<Community>[] = [
    { header: "Community", cell: (c) => <code>{c.community}</code> },
    { header: "Title", cell: (c) => c.title },
    { header: "Description", wrap: true, cell: (c) => c.description },
    {
      header: "Modules",
      cell: (c) =>
        (modules.data ?? [])
          .filter((m) => m.community_id === c.id)
          .map((m) => (
            <span key={m.id} class="chip">
              <Link href={`/modules/${m.id}`}>{m.name}</Link>
            </span>
          )),
    },
    can("operator") && {
      header: "Actions",
      cell: (c) => (
        <span class="row">
          <button type="button" onClick={() => setEditing(editing === c.id ? null : c.id)}>
            Edit
          </button>
          <ConfirmButton
            label="Delete"
            question={`Delete community ${c.community}?`}
            action={async () => {
              await ok(api.DELETE("/v1/communities/{id}", { params: { path: { id: c.id } } }));
              communities.reload();
            }}
          />
        </span>
      ),
    },
  ];
  const current = communities.data?.find((c) => c.id === editing);
  return (
    <Page title="Communities">
      <ErrorBox error={communities.error} />
      {can("operator") && !current ? (
        <CommunityForm
          onSave={async (body) => {
            await ok(api.POST("/v1/communities", { body }));
            communities.reload();
          }}
        />
      ) : null}
      {current ? (
        <CommunityForm
          key={current.id}
          community={current}
          onCancel={() => setEditing(null)}
          onSave={async (body) => {
            await ok(api.PATCH("/v1/communities/{id}", { params: { path: { id: current.id } }, body }));
            setEditing(null);
            communities.reload();
          }}
        />
      ) : null}
      <DataTable testId="communities" loaded={Boolean(communities.data)} columns={columns} rows={communities.data} rowKey={(c) => c.id} />
    </Page>
  );
}
