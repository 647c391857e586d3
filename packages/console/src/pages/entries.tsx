import { useState } from "preact/hooks";
import { type Api, type FetchResult, ok } from "../api.js";
import { Choice, useSubmit } from "../form.js";
import { useSession } from "../session.js";
import { Table, useItems } from "../table.js";
import { ActionButton, ErrorBox } from "../ui.js";

export type ModuleType = "IP_RANGES" | "AS_PREFIXES" | "DOMAINS" | "COUNTRY";

/** One entry of any type, as the four entry routes answer it. */
interface Entry {
  id: string;
  comment: string;
  cidr?: string;
  asn?: number | null;
  as_set?: string | null;
  domain?: string;
  include_subdomains?: boolean;
  country?: string;
}

const KINDS: Record<ModuleType, { path: string; field: "cidr" | "asn" | "domain" | "country"; label: string; header: string }> = {
  IP_RANGES: { path: "ip-range-entries", field: "cidr", label: "CIDR", header: "cidr,comment" },
  AS_PREFIXES: { path: "as-entries", field: "asn", label: "AS number or AS-SET", header: "asn,comment" },
  DOMAINS: { path: "domain-entries", field: "domain", label: "Domain", header: "domain,include_subdomains,comment" },
  COUNTRY: { path: "country-entries", field: "country", label: "Country (ISO code)", header: "country,comment" },
};

// The four entry routes share one shape; the path is chosen at run time, so the typed client is
// reached through this one untyped door and the answers are read as `Entry`.
type Untyped = {
  GET(path: string, init: object): Promise<{ data?: unknown; error?: unknown; response: Response }>;
  POST(path: string, init: object): Promise<{ data?: unknown; error?: unknown; response: Response }>;
  PATCH(path: string, init: object): Promise<{ data?: unknown; error?: unknown; response: Response }>;
  DELETE(path: string, init: object): Promise<{ data?: unknown; error?: unknown; response: Response }>;
};
const untyped = (api: Api) => api as unknown as Untyped;

function entryValue(e: Entry): string {
  return String(e.cidr ?? e.asn ?? e.as_set ?? e.domain ?? e.country ?? "");
}

function bodyOf(type: ModuleType, value: string, comment: string): object {
  const field = KINDS[type].field;
  // An AS-SET (AS-EXAMPLE, AS64500:AS-CUSTOMERS, RIPE::AS-EXAMPLE) goes in as_set.
  if (field === "asn" && /^(?:[A-Z0-9_-]+::)?(?:AS\d+:)*AS-/i.test(value.trim())) return { as_set: value.trim(), comment };
  return { [field]: field === "asn" ? value.replace(/^AS/i, "") : value, comment };
}

export function Entries({ moduleId, type }: { moduleId: string; type: ModuleType }) {
  const { api, can } = useSession();
  const kind = KINDS[type];
  const base = `/v1/modules/${moduleId}/${kind.path}`;
  const entries = useItems(() => untyped(api).GET(base, { params: { query: { limit: 500 } } }) as Promise<FetchResult<{ items: Entry[] }>>, [base]);
  const [value, setValue] = useState("");
  const [comment, setComment] = useState("");
  const { error, submit } = useSubmit();
  const writer = can("operator");
  return (
    <section aria-label="Entries">
      <h2>Entries</h2>
      <ErrorBox error={entries.error} />
      {writer ? (
        <form
          class="inline"
          aria-label="Add entry"
          onSubmit={submit(async () => {
            await ok(untyped(api).POST(base, { body: bodyOf(type, value.trim(), comment) }));
            setValue("");
            setComment("");
            entries.reload();
          })}
        >
          <input name="entry-value" aria-label={kind.label} placeholder={kind.label} required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
          <input name="entry-comment" aria-label="Comment" placeholder="comment" value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
          <button type="submit" class="primary">
            Add entry
          </button>
          <ErrorBox error={error} />
        </form>
      ) : null}
      <Table testId="entries" columns={[{ header: kind.label }, { header: "Comment" }, writer && { header: "Actions" }]}>
        {(entries.data ?? []).map((e) => (
          <EntryRow key={e.id} entry={e} base={base} type={type} writer={writer} onChange={entries.reload} />
        ))}
      </Table>
      {writer ? <CsvImport moduleId={moduleId} header={kind.header} onImported={entries.reload} /> : null}
    </section>
  );
}

function EntryRow(props: { entry: Entry; base: string; type: ModuleType; writer: boolean; onChange: () => void }) {
  const { api } = useSession();
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(entryValue(props.entry));
  const [comment, setComment] = useState(props.entry.comment);
  const url = `${props.base}/${props.entry.id}`;
  if (editing) {
    return (
      <tr>
        <td>
          <input aria-label="Value" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </td>
        <td>
          <input aria-label="Comment" value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
        </td>
        <td>
          <ActionButton
            label="Save"
            kind="primary"
            action={async () => {
              await ok(untyped(api).PATCH(url, { body: bodyOf(props.type, value.trim(), comment) }));
              setEditing(false);
              props.onChange();
            }}
          />
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </td>
      </tr>
    );
  }
  return (
    <tr>
      <td>{entryValue(props.entry)}</td>
      <td>{props.entry.comment}</td>
      {props.writer ? (
        <td>
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
          <ActionButton
            label="Delete"
            kind="danger"
            action={async () => {
              await ok(untyped(api).DELETE(url, {}));
              props.onChange();
            }}
          />
        </td>
      ) : null}
    </tr>
  );
}

interface CsvResult {
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  errors: { line: number; value: string; message: string }[];
}

const MODES = [
  ["merge", "merge: add and update"],
  ["replace", "replace: exactly the file"],
] as const;

/** Paste CSV, see what it would change (a dry run), then commit the same text. */
function CsvImport(props: { moduleId: string; header: string; onImported: () => void }) {
  const { api } = useSession();
  const [text, setText] = useState("");
  const [mode, setMode] = useState<"merge" | "replace">("merge");
  const [preview, setPreview] = useState<{ text: string; mode: string; result: CsvResult } | null>(null);
  const [done, setDone] = useState<CsvResult | null>(null);
  const [error, setError] = useState<Error | null>(null);

  async function send(dryRun: boolean): Promise<CsvResult> {
    const answer = await untyped(api).POST(`/v1/modules/${props.moduleId}/entries.csv`, {
      params: { query: { mode, dry_run: dryRun ? "true" : "false" } },
      body: text,
      bodySerializer: (b: string) => b,
      headers: { "content-type": "text/csv" },
    });
    if (!answer.response.ok && Array.isArray((answer.error as { errors?: unknown })?.errors))
      return { created: 0, updated: 0, deleted: 0, unchanged: 0, ...(answer.error as object) } as CsvResult;
    return (await ok(Promise.resolve(answer))) as CsvResult;
  }

  const current = preview && preview.text === text && preview.mode === mode ? preview.result : null;
  return (
    <details class="card">
      <summary>Import CSV</summary>
      <label>
        CSV ({props.header})
        <textarea name="csv" rows={5} value={text} placeholder={`${props.header}\n`} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      <Choice label="Mode" value={mode} onChange={(m) => setMode(m as "merge" | "replace")} options={MODES} />
      <div class="row">
        <ActionButton
          label="Dry run"
          action={async () => {
            setError(null);
            setDone(null);
            setPreview({ text, mode, result: await send(true) });
          }}
        />
        {current && current.errors.length === 0 ? (
          <ActionButton
            label="Commit import"
            kind="primary"
            action={async () => {
              const result = await send(false);
              setDone(result);
              setPreview(null);
              props.onImported();
            }}
          />
        ) : null}
      </div>
      <ErrorBox error={error} />
      {current ? <CsvCounts result={current} title="Dry run: would change" /> : null}
      {done ? <CsvCounts result={done} title="Imported" /> : null}
    </details>
  );
}

function CsvCounts({ result, title }: { result: CsvResult; title: string }) {
  return (
    <div data-testid="csv-result">
      <p>
        {title}: {result.created} created, {result.updated} updated, {result.deleted} deleted, {result.unchanged} unchanged
      </p>
      {result.errors.length ? (
        <ul class="error">
          {result.errors.map((e) => (
            <li key={e.line}>
              line {e.line}: {e.value} — {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
