import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { useSession } from "../session.js";
import { type Column, DataTable, useItems } from "../table.js";
import { ActionButton, Ago, ErrorBox } from "../ui.js";

type CdnSource = Schema<"CdnSource">;

interface Preview {
  url: string;
  fetched_bytes: number;
  prefix_count_v4: number;
  prefix_count_v6: number;
  rejected: number;
  sample: string[];
}

function PreviewBox({ preview }: { preview: Preview | null }) {
  if (!preview) return null;
  return (
    <div class="card" data-testid="cdn-preview">
      <p>
        {preview.url}: {preview.prefix_count_v4} IPv4, {preview.prefix_count_v6} IPv6, {preview.rejected} rejected ({preview.fetched_bytes} bytes)
      </p>
      <pre>{preview.sample.slice(0, 20).join("\n")}</pre>
    </div>
  );
}

const columns: Column<CdnSource>[] = [
  { header: "URL", wrap: true, cell: (s) => s.url },
  { header: "Format", cell: (s) => s.format },
  { header: "Prefixes", num: true, cell: (s) => s.last_prefix_count ?? "—" },
  {
    header: "Last fetch",
    cell: (s) => (
      <>
        <Ago at={s.last_refreshed_at} />
        {s.last_error ? <p class="error small">{s.last_error}</p> : null}
      </>
    ),
  },
];

export function CdnSources({ moduleId }: { moduleId: string }) {
  const { api, can } = useSession();
  // Previews fetch the feed from the controller: operators only, like every write.
  const writer = can("operator");
  const path = { module_id: moduleId };
  const sources = useItems(() => api.GET("/v1/modules/{module_id}/cdn-sources", { params: { path, query: { limit: 500 } } }), [moduleId]);
  const [url, setUrl] = useState("");
  const [format, setFormat] = useState<"text" | "json">("text");
  const [jsonPath, setJsonPath] = useState("");
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const body = () => ({ url, format, json_path: format === "json" ? jsonPath : null });
  const actions: Column<CdnSource> = {
    header: "Actions",
    cell: (s) => (
      <>
        <ActionButton
          label="Preview"
          action={async () =>
            setPreview(
              await ok(
                api.POST("/v1/modules/{module_id}/cdn-sources/{source_id}/preview", {
                  params: { path: { module_id: moduleId, source_id: s.id } },
                  body: {},
                }),
              ),
            )
          }
        />
        <ActionButton
          label="Delete"
          kind="danger"
          action={async () => {
            await ok(api.DELETE("/v1/modules/{module_id}/cdn-sources/{source_id}", { params: { path: { module_id: moduleId, source_id: s.id } } }));
            sources.reload();
          }}
        />
      </>
    ),
  };
  return (
    <section aria-label="CDN sources">
      <h2>CDN sources</h2>
      <ErrorBox error={sources.error} />
      <DataTable columns={[...columns, writer && actions]} rows={sources.data} rowKey={(s) => s.id} />
      {writer ? (
        <form class="inline" aria-label="Add CDN source" onSubmit={(e) => e.preventDefault()}>
          <input aria-label="Feed URL" placeholder="https://…" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
          <select aria-label="Format" value={format} onChange={(e) => setFormat(e.currentTarget.value as "text" | "json")}>
            <option value="text">text</option>
            <option value="json">json</option>
          </select>
          {format === "json" ? (
            <input aria-label="JSON path" placeholder="prefixes[*].ip_prefix" value={jsonPath} onInput={(e) => setJsonPath(e.currentTarget.value)} />
          ) : null}
          <ActionButton
            label="Preview feed"
            action={async () => {
              setError(null);
              setPreview(await ok(api.POST("/v1/modules/{module_id}/cdn-sources/preview", { params: { path }, body: body() })));
            }}
          />
          <ActionButton
            label="Add source"
            kind="primary"
            action={async () => {
              await ok(api.POST("/v1/modules/{module_id}/cdn-sources", { params: { path }, body: body() }));
              setUrl("");
              sources.reload();
            }}
          />
        </form>
      ) : null}
      <ErrorBox error={error} />
      <PreviewBox preview={preview} />
    </section>
  );
}
