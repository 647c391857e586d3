import { createHash } from "node:crypto";
import type { FileText } from "../atomic-file.js";
import { type Community, communityLiteral, communityText, compareCommunities, community as parseCommunity, prefix, quoted, RenderError } from "./values.js";

// The static protocols of a render: one per community set and family, its routes in the
// revision's order. A 500,000-prefix revision spends most of its render here (checking each
// prefix, writing its route line), so a {@link StaticsCache} keeps each set's text from the last
// render and only the sets whose routes changed are written again.

export const TABLE_V4 = "rl_v4";
export const TABLE_V6 = "rl_v6";

/**
 * The text of each community set's static protocol from the last render that used this cache.
 * A set whose prefixes are the same strings in the same order, under the same route kind,
 * community titles and file layout, gets its text back instead of being rendered again; the
 * result is byte for byte what a render without the cache gives. One cache per config path.
 */
export class StaticsCache {
  /** Route kind, titles and layout the texts were written under; another empties the cache. */
  context = "";
  /** `<family> <set>` → the set's prefixes as given and its protocol's text. */
  groups = new Map<string, CachedGroup>();
  /** The communities as written → the parsed, sorted set, for every spelling seen. */
  spellings = new Map<string, { set: Community[]; key: string }>();
}

interface CachedGroup {
  nets: string[];
  /** The protocol's lines joined, without the blank line before it. */
  body: string;
  name: string;
  /**
   * A split render's file text (`body` and a newline), made once: a set that did not change hands
   * back the same string, which the apply's WrittenFiles tells by identity without a read.
   */
  file?: string;
}

export interface StaticsOut {
  /** The include file's lines. */
  lines: string[];
  files: Record<string, FileText>;
  /** The include's name when each protocol goes into a file of its own; null = inline. */
  split: string | null;
}

interface Group {
  key: string;
  set: Community[];
  /** The prefixes as given (what the cache compares). */
  nets: string[];
  /** The prefixes as checked and written (a route each). */
  routes: string[];
  /** The text of the last render, when its prefixes are the same. */
  reused: CachedGroup | null;
}

/**
 * Both families' static protocols into `out`. With a cache, sets whose prefixes did not change
 * keep their text; any refusal is left to a render without it, so errors name the same prefix.
 */
export function renderStatics(
  out: StaticsOut,
  prefixes: { v4: readonly [string, string[]][]; v6: readonly [string, string[]][] },
  kind: string,
  titles: Map<string, string>,
  cache?: StaticsCache,
): void {
  if (!cache) {
    const next = new Map<string, CachedGroup>();
    renderFamily(out, prefixes.v4, 4, kind, titles, null, next);
    renderFamily(out, prefixes.v6, 6, kind, titles, null, next);
    return;
  }
  const context = JSON.stringify([kind, out.split, [...titles]]);
  if (cache.context !== context) {
    cache.groups.clear();
    cache.context = context;
  }
  // Spellings of sets long gone would pile up over the revisions; a revision has a handful.
  if (cache.spellings.size > 10_000) cache.spellings.clear();
  const next = new Map<string, CachedGroup>();
  const mark = { lines: out.lines.length, files: { ...out.files } };
  try {
    renderFamily(out, prefixes.v4, 4, kind, titles, cache, next);
    renderFamily(out, prefixes.v6, 6, kind, titles, cache, next);
    cache.groups = next;
  } catch {
    // Whatever was wrong, the render without the cache finds it first, as it always did.
    out.lines.length = mark.lines;
    for (const name of Object.keys(out.files)) if (!(name in mark.files)) delete out.files[name];
    cache.groups.clear();
    renderStatics(out, prefixes, kind, titles);
  }
}

function renderFamily(
  out: StaticsOut,
  prefixes: readonly [string, string[]][],
  family: 4 | 6,
  kind: string,
  titles: Map<string, string>,
  cached: StaticsCache | null,
  next: Map<string, CachedGroup>,
): void {
  // Without a cache each entry is checked whole before the next (shape, prefix, communities),
  // so a refusal names the first bad entry; with one, prefixes are checked once grouped.
  const eager = cached === null;
  const cache = cached ?? new StaticsCache();
  const key = family === 4 ? "v4" : "v6";
  const groups = new Map<string, Group>();
  // Most prefixes share one communities array per set (decoded sections do): looked up by
  // identity first, by spelling next, parsed only for a spelling never seen.
  const byArray = new Map<readonly string[], Group>();
  const groupOf = (communities: string[], path: string): Group => {
    const spelling = `${communities.length} ${communities.join(" ")}`;
    let parsed = cache.spellings.get(spelling);
    if (!parsed) {
      const set = uniqueSorted(communities.map((c, j) => parseCommunity(c, `${path}[1][${j}]`)));
      parsed = { set, key: set.map(communityText).join(",") };
      cache.spellings.set(spelling, parsed);
    }
    let group = groups.get(parsed.key);
    if (!group) groups.set(parsed.key, (group = { key: parsed.key, set: parsed.set, nets: [], routes: [], reused: null }));
    return group;
  };
  // The last array and its group: a revision's sets come in runs, and a run costs no lookup.
  let lastArray: readonly string[] | null = null;
  let lastGroup: Group | null = null;
  for (let i = 0; i < prefixes.length; i++) {
    const entry = prefixes[i];
    if (!Array.isArray(entry) || !Array.isArray(entry[1])) throw new RenderError(`prefixes.${key}[${i}]`, "must be [prefix, [community, ...]]");
    const net = eager ? prefix(entry[0], family, `prefixes.${key}[${i}]`) : "";
    let group: Group | null | undefined = entry[1] === lastArray ? lastGroup : byArray.get(entry[1]);
    if (!group) byArray.set(entry[1], (group = groupOf(entry[1], `prefixes.${key}[${i}]`)));
    lastArray = entry[1];
    lastGroup = group;
    group.nets.push(entry[0]);
    if (eager) group.routes.push(net);
  }
  for (const group of groups.values()) {
    const last = cache.groups.get(`${family} ${group.key}`);
    if (eager || !last) continue;
    if (sameStrings(last.nets, group.nets)) group.reused = last;
    else group.reused = patchGroup(last, group, family, kind, titles);
  }
  // A set written whole has each prefix checked now; a reused set's prefixes were checked when
  // its text was written. A refusal here is the render without the cache's to name (it checks
  // in the revision's order), so the sets need not be walked in that order.
  for (const group of eager ? [] : groups.values()) {
    if (!group.reused) for (const net of group.nets) group.routes.push(prefix(net, family, `prefixes.${key}`));
  }
  const names = new Set<string>();
  const sorted = [...groups.values()].sort((a, b) => compareSets(a.set, b.set));
  for (const group of sorted) {
    const made = group.reused ?? writeGroup(group, family, kind, titles);
    if (names.has(made.name)) throw new RenderError(`prefixes.${key}`, `two community sets hash to ${made.name}`);
    names.add(made.name);
    next.set(`${family} ${group.key}`, made);
    if (out.split === null) {
      out.lines.push("", made.body);
    } else {
      const file = staticFileName(out.split, made.name);
      if (made.file === undefined) {
        made.file = `${made.body}\n`;
        // The body becomes a slice of the file's text (slicing flattens it): one copy kept, not two.
        made.body = made.file.slice(0, -1);
      }
      out.files[file] = made.file;
      out.lines.push(`include ${quoted(file, "statics")};`);
    }
  }
}

/** Routes a group's text may differ by, in a row, before it is written whole instead of patched. */
const PATCH_MISSES = 64;
/** How far ahead in the last text's prefixes a prefix is looked for (a run of dropped routes). */
const PATCH_LOOKAHEAD = 32;

/**
 * The text of a set whose prefixes changed a little since `last`: the last text's route lines
 * copied in runs for the prefixes it had (same strings, same order), a line written and its
 * prefix checked only for each new one, and the header written again (its count changed). Null
 * when the two lists are too far apart to be worth it (`PATCH_MISSES` new prefixes in a row):
 * the set is then written whole. Kept prefixes were checked when their line was written.
 */
function patchGroup(last: CachedGroup, group: Group, family: 4 | 6, kind: string, titles: Map<string, string>): CachedGroup | null {
  const was = last.nets;
  const now = group.nets;
  const body = last.body;
  // The last text: three header lines, then a "\n  route …;" piece a prefix, then "\n}".
  let start = -1;
  for (let k = 0, at = -1; k < 3; k++) {
    at = body.indexOf("\n", at + 1);
    if (at < 0) return null;
    start = at;
  }
  const stop = body.length - 2;
  const pieces: string[] = [];
  let runFrom = start;
  let at = start; // where old route i's piece starts
  const next = (from: number) => {
    const nl = body.indexOf("\n", from + 1);
    return nl < 0 || nl > stop ? stop : nl;
  };
  let i = 0;
  let misses = 0;
  for (let j = 0; j < now.length; j++) {
    const net = now[j]!;
    if (i < was.length && was[i] === net) {
      at = next(at);
      i++;
      misses = 0;
      continue;
    }
    let d = 1;
    while (d <= PATCH_LOOKAHEAD && i + d < was.length && was[i + d] !== net) d++;
    if (d <= PATCH_LOOKAHEAD && i + d < was.length) {
      // Routes i … i+d-1 were dropped; route i+d is this one.
      if (runFrom < at) pieces.push(body.slice(runFrom, at));
      for (let k = 0; k < d; k++) at = next(at);
      runFrom = at;
      at = next(at);
      i += d + 1;
      misses = 0;
      continue;
    }
    if (++misses > PATCH_MISSES) return null;
    if (runFrom < at) pieces.push(body.slice(runFrom, at));
    runFrom = at;
    pieces.push(`\n  route ${prefix(net, family, "prefixes")} ${kind};`);
  }
  // What is left of the last text's routes was dropped.
  if (runFrom < at) pieces.push(body.slice(runFrom, at));
  const { name, head } = groupHead(group, family, now.length, titles);
  return { nets: now, body: `${head}${pieces.join("")}\n}`, name };
}

function writeGroup(group: Group, family: 4 | 6, kind: string, titles: Map<string, string>): CachedGroup {
  const nets = group.routes;
  const { name, head } = groupHead(group, family, nets.length, titles);
  // One join over the prefixes writes every `  route <prefix> <kind>;` line: no string a route
  // (500k of them were most of a render's garbage).
  const routes = nets.length > 0 ? `\n  route ${nets.join(` ${kind};\n  route `)} ${kind};` : "";
  return { nets: group.nets, body: `${head}${routes}\n}`, name };
}

/** A set's protocol name and the three lines before its routes (a comment with their count, the protocol, its channel). */
export function groupHead({ key, set }: Pick<Group, "key" | "set">, family: 4 | 6, count: number, titles: Map<string, string>): { name: string; head: string } {
  // Named after a hash of the set, not its position: a set keeps its protocol from one
  // revision to the next, so BIRD's reconfigure diffs routes instead of replacing protocols.
  const name = `rl_static${family}_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
  const described = set.map((c) => {
    const title = titles.get(communityText(c));
    return title ? `${communityText(c)} (${title})` : communityText(c);
  });
  const actions = set.map((c) => (c.kind === "standard" ? `bgp_community.add(${communityLiteral(c)}); ` : `bgp_large_community.add(${communityLiteral(c)}); `));
  const head = [
    `# ${count} IPv${family} prefix${count === 1 ? "" : "es"} with ${described.join(", ") || "no community"}`,
    `protocol static ${name} {`,
    `  ipv${family} { table ${family === 4 ? TABLE_V4 : TABLE_V6}; import ${actions.length > 0 ? `filter { ${actions.join("")}accept; }` : "all"}; };`,
  ].join("\n");
  return { name, head };
}

/**
 * The file a split render gives the static protocol `protocol` (`rl_static4_<hash>`), beside the
 * include: `rl-routes.conf` → `rl-routes.rl_static4_<hash>.conf`.
 */
export function staticFileName(includeName: string, protocol: string): string {
  return `${includeName.replace(/\.conf$/, "")}.${protocol}.conf`;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function uniqueSorted(set: Community[]): Community[] {
  const sorted = [...set].sort(compareCommunities);
  return sorted.filter((c, i) => i === 0 || compareCommunities(c, sorted[i - 1] as Community) !== 0);
}

export function compareSets(a: Community[], b: Community[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const d = compareCommunities(a[i] as Community, b[i] as Community);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}
