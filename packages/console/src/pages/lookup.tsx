import { useState } from "preact/hooks";
import { ok } from "../api.js";
import { useSubmit } from "../form.js";
import { Link } from "../router.js";
import { useSession } from "../session.js";
import { Badge, ErrorBox, Page } from "../ui.js";

/** How lookup marks an ASN-origin match's RFC 6811 state. */
const RPKI_TONES: Record<string, "ok" | "warn" | "bad" | "info"> = { valid: "ok", invalid: "bad", not_found: "info", unavailable: "warn" };

interface Match {
  layer: string;
  module_id: string;
  module_name: string;
  module_type: string;
  community: string | null;
  community_title: string | null;
  value?: string;
  prefix?: string;
  source?: string;
  origin?: string;
  via?: string;
  rpki?: string;
  addresses?: string[];
}
interface Result {
  query: string;
  kind: string;
  normalized: string;
  matched: boolean;
  matches: Match[];
  revision: { revision_id: number; prefix: string; communities: string[] } | null;
  /** "announced as 1.2.3.0/24 with 65000:100 — from modules A, B" or why not. */
  answer: string;
}

function ModuleLine({ m, children }: { m: Match; children: preact.ComponentChildren }) {
  return (
    <li>
      <Link href={`/modules/${m.module_id}`}>{m.module_name}</Link> {m.community ? <span class="chip">{m.community}</span> : null} {children}
    </li>
  );
}

/** One box for an address or a name; the answer as a tree: entries, then collected data, then the revision. */
export function LookupPage() {
  const { api } = useSession();
  const [q, setQ] = useState("");
  const [result, setResult] = useState<Result | null>(null);
  const { error, submit } = useSubmit();
  const entries = result?.matches.filter((m) => m.layer === "entry") ?? [];
  const snapshot = result?.matches.filter((m) => m.layer === "snapshot") ?? [];
  return (
    <Page title="Lookup">
      <form
        class="inline"
        aria-label="Lookup"
        onSubmit={submit(
          async () => setResult((await ok(api.GET("/v1/lookup", { params: { query: { q: q.trim() } } }))) as Result),
          () => setResult(null),
        )}
      >
        <input
          type="search"
          name="q"
          aria-label="IP address or domain"
          placeholder="192.0.2.1 or example.com"
          required
          value={q}
          onInput={(e) => setQ(e.currentTarget.value)}
        />
        <button type="submit" class="primary">
          Look up
        </button>
      </form>
      <ErrorBox error={error} />
      {result ? <p data-testid="lookup-answer">{result.answer}</p> : null}
      {result ? (
        <ul class="tree" data-testid="lookup">
          <li>
            <strong>{result.normalized}</strong> ({result.kind}) — {result.matched ? "in the lists" : "in no list"}
            <ul>
              <li>
                Entries ({entries.length})
                <ul>
                  {entries.map((m) => (
                    <ModuleLine key={`${m.module_id}-${m.value}`} m={m}>
                      entry <code>{m.value}</code>
                    </ModuleLine>
                  ))}
                </ul>
              </li>
              <li>
                Collected ({snapshot.length})
                <ul>
                  {snapshot.map((m) => (
                    <ModuleLine key={`${m.module_id}-${m.prefix ?? m.origin}`} m={m}>
                      {m.source} <code>{m.prefix ?? m.addresses?.join(", ")}</code> from {m.origin}
                      {m.via ? ` via ${m.via}` : ""}
                      {m.rpki ? (
                        <>
                          {" "}
                          <Badge tone={RPKI_TONES[m.rpki] ?? "info"}>RPKI {m.rpki.replace("_", " ")}</Badge>
                        </>
                      ) : null}
                    </ModuleLine>
                  ))}
                </ul>
              </li>
              <li data-testid="lookup-revision">
                Revision{" "}
                {result.revision ? (
                  <>
                    {result.revision.revision_id}: <code>{result.revision.prefix}</code>{" "}
                    {result.revision.communities.map((c) => (
                      <span key={c} class="chip">
                        {c}
                      </span>
                    ))}
                  </>
                ) : (
                  <span class="muted">not announced</span>
                )}
              </li>
            </ul>
          </li>
        </ul>
      ) : null}
    </Page>
  );
}
