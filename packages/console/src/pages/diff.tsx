import { useState } from "preact/hooks";

export interface Tagged {
  prefix: string;
  communities: string[];
}
export interface Retagged {
  prefix: string;
  from_communities: string[];
  to_communities: string[];
}
export interface DiffData {
  from: number;
  to: number;
  added: Tagged[];
  removed: Tagged[];
  changed: Retagged[];
  added_count: number;
  removed_count: number;
  changed_count: number;
  truncated: boolean;
}

const family = (prefix: string) => (prefix.includes(":") ? "IPv6" : "IPv4");
const tags = (c: string[]) => (c.length ? c.join(" ") : "no community");

/** Prefixes under their set of communities (one group per distinct set, as BIRD tags them). */
function byCommunity<T extends { prefix: string }>(items: T[], keys: (item: T) => string[]): [string, T[]][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    for (const key of keys(item)) {
      const list = groups.get(key) ?? [];
      list.push(item);
      groups.set(key, list);
    }
  }
  return [...groups].sort(([a], [b]) => (a < b ? -1 : 1));
}

function counts(items: { prefix: string }[]) {
  let v4 = 0;
  for (const i of items) if (family(i.prefix) === "IPv4") v4++;
  return { v4, v6: items.length - v4 };
}

function Group<T extends { prefix: string }>(props: {
  kind: string;
  title: string;
  total: number;
  items: T[];
  keys: (i: T) => string[];
  line: (i: T) => string;
}) {
  const c = counts(props.items);
  const groups = byCommunity(props.items, props.keys);
  return (
    <section class={`diff-group ${props.kind}`} data-testid={`diff-${props.kind}`}>
      <h2>
        {props.title} <span data-testid={`diff-${props.kind}-count`}>{props.total}</span>
        <small class="muted">
          {" "}
          (IPv4 <span data-testid={`diff-${props.kind}-v4`}>{c.v4}</span>, IPv6 <span data-testid={`diff-${props.kind}-v6`}>{c.v6}</span>)
        </small>
      </h2>
      {groups.map(([community, items]) => (
        <details key={community} open={items.length <= 50}>
          <summary>
            {community} — {items.length}
          </summary>
          <ul class="prefixes">
            {items.map((i) => (
              <li key={i.prefix}>{props.line(i)}</li>
            ))}
          </ul>
        </details>
      ))}
      {props.items.length === 0 ? <p class="muted">none</p> : null}
    </section>
  );
}

/** A revision diff: added, withdrawn and re-tagged prefixes by community, with a filter box. */
export function DiffView({ diff }: { diff: DiffData }) {
  const [filter, setFilter] = useState("");
  const f = filter.trim().toLowerCase();
  const keep = (i: { prefix: string; communities?: string[]; from_communities?: string[]; to_communities?: string[] }) =>
    !f || [i.prefix, ...(i.communities ?? []), ...(i.from_communities ?? []), ...(i.to_communities ?? [])].some((s) => s.toLowerCase().includes(f));
  return (
    <div class="diff">
      <label class="filter">
        Filter <input type="search" name="diff-filter" placeholder="prefix or community" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
      </label>
      {diff.truncated ? <p class="muted">The lists are cut at the first entries; the counts are whole.</p> : null}
      <div class="diff-groups">
        <Group kind="added" title="Added" total={diff.added_count} items={diff.added.filter(keep)} keys={(i) => [tags(i.communities)]} line={(i) => i.prefix} />
        <Group
          kind="removed"
          title="Withdrawn"
          total={diff.removed_count}
          items={diff.removed.filter(keep)}
          keys={(i) => [tags(i.communities)]}
          line={(i) => i.prefix}
        />
        <Group
          kind="changed"
          title="Re-tagged"
          total={diff.changed_count}
          items={diff.changed.filter(keep)}
          keys={(i) => [`${tags(i.from_communities)} → ${tags(i.to_communities)}`]}
          line={(i) => i.prefix}
        />
      </div>
    </div>
  );
}
