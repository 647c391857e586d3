import { ok, type Schema } from "../api.js";
import { useListEditing } from "../editing.js";
import { ApiFormView, Field, useApiForm, useValues } from "../fields.js";
import { Link } from "../router.js";
import { useSession } from "../session.js";
import { DataTable, type MaybeColumn, useItems } from "../table.js";
import { ErrorBox, Page } from "../ui.js";

type Community = Schema<"Community">;

interface CommunityBody {
  community: string;
  title: string;
  description: string;
}

function CommunityForm(props: { community?: Community | undefined; onSave: (body: CommunityBody) => Promise<unknown>; onCancel?: (() => void) | undefined }) {
  const c = props.community;
  const form = useApiForm(c ? `community-${c.id}` : "new-community");
  const { values: v, bind } = useValues({ community: c?.community ?? "", title: c?.title ?? "", description: c?.description ?? "" });
  return (
    <ApiFormView
      form={form}
      label={c ? `Edit community ${c.community}` : "New community"}
      submit={c ? "Save community" : "Create community"}
      action={() => props.onSave({ community: v.community.trim(), title: v.title, description: v.description })}
      onCancel={props.onCancel}
    >
      <div class="grid">
        <Field
          label="Community (ASN:VALUE or ASN:V1:V2)"
          {...bind("community")}
          input={{ required: true, maxLength: 64, pattern: "[0-9]+:[0-9]+(:[0-9]+)?", placeholder: "65000:100" }}
        />
        <Field label="Title" {...bind("title")} input={{ maxLength: 128 }} />
        <Field label="Description" {...bind("description")} input={{ maxLength: 1024 }} />
      </div>
    </ApiFormView>
  );
}

/** The tenant's BGP communities, the modules that tag their prefixes with each, and their CRUD (operator+). */
export function CommunitiesPage() {
  const { api, can } = useSession();
  const communities = useItems(() => api.GET("/v1/communities", { params: { query: { limit: 500 } } }), []);
  const modules = useItems(() => api.GET("/v1/modules", { params: { query: { limit: 500 } } }), []);
  const edit = useListEditing({
    list: communities,
    create: (body: CommunityBody) => ok(api.POST("/v1/communities", { body })),
    update: (id, body) => ok(api.PATCH("/v1/communities/{id}", { params: { path: { id } }, body })),
    remove: (id) => ok(api.DELETE("/v1/communities/{id}", { params: { path: { id } } })),
  });
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
    can("operator") && edit.actions((c) => `Delete community ${c.community}?`),
  ];
  return (
    <Page title="Communities">
      <ErrorBox error={communities.error} />
      {edit.current || can("operator") ? <CommunityForm key={edit.current?.id} community={edit.current} onCancel={edit.cancel} onSave={edit.save} /> : null}
      <DataTable testId="communities" loaded={Boolean(communities.data)} columns={columns} rows={communities.data} rowKey={(c) => c.id} />
    </Page>
  );
}
