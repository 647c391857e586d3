import { createHash } from "node:crypto";
import {
  aggregateTagged,
  buildPrefixIndex,
  DEFAULT_EXCLUDE_PREFIXES,
  DEFAULT_MIN_PREFIX_LENGTH_V4,
  DEFAULT_MIN_PREFIX_LENGTH_V6,
  removeBogons,
  type TaggedPrefix,
} from "@rlc/shared/prefix";

/** One announced prefix: `[prefix, communities, module_ids]`. */
export type RevisionEntry = [string, string[], string[]];

export interface RevisionContent {
  v4: RevisionEntry[];
  v6: RevisionEntry[];
}

export interface ModuleInput {
  module_id: string;
  name: string;
  community: string | null;
  prefixes: string[];
}

export interface BuiltRevision {
  content: RevisionContent;
  digest: string;
  input_prefix_count: number;
  dropped_prefix_count: number;
  modules: { module_id: string; name: string; community: string | null; prefix_count: number }[];
}

export interface BogonSettings {
  min_prefix_length_v4?: number;
  min_prefix_length_v6?: number;
  exclude_prefixes?: string[];
}

/** The digest covers what routers receive (prefix and communities), not the attribution. */
export function digestOf(content: RevisionContent): string {
  const h = createHash("sha256");
  for (const list of [content.v4, content.v6]) for (const [p, c] of list) h.update(`${p} ${c.join(",")}\n`);
  return `sha256:${h.digest("hex")}`;
}

const firstAddress = (prefix: string) => prefix.slice(0, prefix.indexOf("/"));
const lengthOf = (prefix: string) => Number(prefix.slice(prefix.indexOf("/") + 1));

/**
 * Which modules each announced prefix stands for: a module whose prefix contains it whole, or
 * whose prefix inside it is routed by it (it is the longest announcement over that prefix).
 * Two CIDR blocks overlap only when one contains the other, so two longest-match passes over
 * first addresses find every pair.
 */
function attribute(out: TaggedPrefix[], modules: { module_id: string; prefixes: string[] }[]): Map<string, Set<string>> {
  const byPrefix = new Map<string, Set<string>>(out.map((o) => [o.prefix, new Set()]));
  const items: { prefix: string; module_id: string }[] = [];
  for (const m of modules) for (const p of m.prefixes) items.push({ prefix: p, module_id: m.module_id });
  const moduleIndex = buildPrefixIndex(items);
  for (const o of out) {
    const len = lengthOf(o.prefix);
    for (const q of moduleIndex.lookup(firstAddress(o.prefix))) if (lengthOf(q.prefix) <= len) byPrefix.get(o.prefix)!.add(q.module_id);
  }
  const outIndex = buildPrefixIndex(out);
  for (const q of items) {
    const o = outIndex.longest(firstAddress(q.prefix));
    if (o && lengthOf(o.prefix) <= lengthOf(q.prefix)) byPrefix.get(o.prefix)!.add(q.module_id);
  }
  return byPrefix;
}

/**
 * Builds a revision's content from the modules' collected prefixes (CONTRACT 5.2): bogons and
 * short prefixes removed first, then the community-aware aggregation of the prefix algebra.
 */
export function buildRevision(modules: ModuleInput[], bird: BogonSettings = {}): BuiltRevision {
  const filter = {
    minLengthV4: bird.min_prefix_length_v4 ?? DEFAULT_MIN_PREFIX_LENGTH_V4,
    minLengthV6: bird.min_prefix_length_v6 ?? DEFAULT_MIN_PREFIX_LENGTH_V6,
    exclude: bird.exclude_prefixes ?? DEFAULT_EXCLUDE_PREFIXES,
  };
  const union = new Set<string>();
  for (const m of modules) for (const p of m.prefixes) union.add(p);
  const unionFiltered = removeBogons([...union], filter);
  const filtered = modules.map((m) => ({ ...m, prefixes: removeBogons(m.prefixes, filter).prefixes }));
  const out = aggregateTagged(filtered.map((m) => ({ prefixes: m.prefixes, communities: m.community ? [m.community] : [] })));
  const sources = attribute(out, filtered);
  const content: RevisionContent = { v4: [], v6: [] };
  for (const o of out) {
    const entry: RevisionEntry = [o.prefix, o.communities, [...sources.get(o.prefix)!].sort()];
    (o.prefix.includes(":") ? content.v6 : content.v4).push(entry);
  }
  const counts = new Map<string, number>();
  for (const list of [content.v4, content.v6]) for (const [, , ids] of list) for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return {
    content,
    digest: digestOf(content),
    input_prefix_count: union.size,
    dropped_prefix_count: unionFiltered.dropped + unionFiltered.cut,
    modules: modules.map((m) => ({ module_id: m.module_id, name: m.name, community: m.community, prefix_count: counts.get(m.module_id) ?? 0 })),
  };
}

/**
 * How many of `current`'s prefixes `next` does not cover whole (CONTRACT 5.3): a prefix counts
 * as kept when some prefix of `next` contains it.
 */
export function withdrawnCount(current: RevisionContent, next: RevisionContent): number {
  const index = buildPrefixIndex([...next.v4, ...next.v6], (e) => e[0]);
  let withdrawn = 0;
  for (const list of [current.v4, current.v6]) {
    for (const [prefix] of list) {
      const len = lengthOf(prefix);
      if (!index.lookup(firstAddress(prefix)).some((e) => lengthOf(e[0]) <= len)) withdrawn++;
    }
  }
  return withdrawn;
}
