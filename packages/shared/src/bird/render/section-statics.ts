import type { ChunkedChange, ChunkedSection, SectionChunk } from "../../bundle/chunked-section.js";
import type { SectionTags } from "../../bundle/tagged-section.js";
import type { FileText } from "../atomic-file.js";
import { type ReadWritten, type RenderedSet, RouteText, SectionStaticsCache, type SetOf } from "./section-statics-cache.js";
import { checkText, END, linesOfSets, type OldFile, ROUTE, type Tally, tallier, writeSet } from "./set-routes.js";
import { compareSets, groupHead, type StaticsOut, staticFileName, uniqueSorted } from "./statics.js";
import { communityText, community as parseCommunity, quoted, RenderError } from "./values.js";

// The static protocols of a split render written from a chunked section (../../bundle/chunked-
// section.ts) rather than from the payload's prefix tuples: each community set's file made from
// the section's bytes, and after a delta only the files of the sets it touched, so an agent's
// apply costs what changed. Byte for byte what renderStatics writes for the same prefixes (a
// property test holds the two together); anything it does not take as it is (a prefix in
// another spelling, a bad community) throws, and the caller renders the payload as before.
//
// What a render keeps for the next one: section-statics-cache.ts.
//
// A set written again after a delta is not written route by route: the chunks the new section
// shares with the last one hold the same lines, so the set's routes in them are the same bytes
// as in its last file, in runs whose places each chunk's tally (its lines by tag, counted once
// per chunk) tells; so are the runs of its base's lines a rebuilt chunk kept (the delta names
// them), found by reading the base chunk's tags. Those runs are copied from the last file (read
// back: the cache does not hold it); only the added routes are written byte by byte. A set the
// last render wrote keeps where its routes were chunk by chunk (its places), so writing it again
// after the next delta looks only at the chunks that delta rebuilt, not at every chunk's tally.

/** What the agent renders from: a section, and when it came from a delta, what the delta did. */
export interface SectionInput {
  section: ChunkedSection;
  /** SHA-256 of the section's bytes. */
  sha256: string;
  /** The delta that made `section` from the section with SHA-256 `baseSha256`; null for a whole section. */
  delta: (Omit<ChunkedChange, "section"> & { baseSha256: string }) | null;
}

/** A route file's text for `bird -p`: the new text with the routes of `against` (the file it replaces, as rendered last time: told by identity) left blank. */
export interface CheckText {
  against: FileText;
  text: Buffer;
}

/**
 * Both families' static protocols into `out` (split: `out.split` names the include), from
 * `input`; answers the check texts of the sets a delta changed. Throws for anything the render
 * of the payload would refuse or spell otherwise; the cache is then cleared.
 */
export function renderSectionStatics(
  out: StaticsOut,
  input: SectionInput,
  kind: string,
  titles: Map<string, string>,
  cache: SectionStaticsCache,
): Record<string, CheckText> {
  if (out.split === null) throw new TypeError("a section render writes split statics");
  try {
    return render(out as StaticsOut & { split: string }, input, kind, titles, cache);
  } catch (error) {
    cache.clear();
    throw error;
  }
}

function render(out: StaticsOut & { split: string }, input: SectionInput, kind: string, titles: Map<string, string>, cache: SectionStaticsCache) {
  const { section, delta } = input;
  const context = JSON.stringify([kind, out.split, [...titles]]);
  // The last render's files are written by now (or were refused): made from this section from
  // here on while their set is unchanged (below), else no more.
  for (const s of cache.sets.values()) s.text.remake(null);
  if (cache.context !== context || cache.tags !== section.tags) {
    cache.clear();
    cache.context = context;
    cache.tags = section.tags;
  }
  const setOf = (tag: number): SetOf => {
    let of = cache.setOfTag[tag];
    if (!of) cache.setOfTag[tag] = of = parseSet(section.tags, tag);
    return of;
  };
  const incremental = delta !== null && cache.sha256 === delta.baseSha256;
  // The sets to write again, each with its lines in the section's order.
  const redo = new Map<string, SetOf>();
  if (incremental) for (const tag of delta.changedTags) redo.set(setOf(tag).id, setOf(tag));
  const tagCount = section.tags.texts.length;
  const slot = new Int32Array(tagCount).fill(-1);
  const chosen: SetOf[] = [];
  const index = new Map<string, number>();
  for (let tag = 0; tag < tagCount; tag++) {
    if (incremental && !delta.changedTags.has(tag) && !redo.has(cache.setOfTag[tag]?.id ?? "")) continue;
    const of = setOf(tag);
    let k = index.get(of.id);
    if (k === undefined) index.set(of.id, (k = chosen.push(of) - 1));
    slot[tag] = k;
  }
  const tail = Buffer.from(` ${kind};`, "latin1");
  const tallyOf = tallier(cache.tallies, tagCount);
  const stamp = ++cache.stamp;

  // Each set written again from its last file where it can be: the routes of the chunks this
  // section shares with the last one are the same bytes, in runs the last file holds, at
  // offsets the chunks' tallies tell. Only the rebuilt chunks' lines are then read one by one.
  const befores = chosen.map((of) => (incremental ? cache.sets.get(of.id) : undefined));
  const old: (OldFile | null)[] = chosen.map(() => null);
  const last = cache.section;
  const lastChunks = last ? last.chunks.length : 0;
  // The sets whose routes' places in the last file are counted from the last section's tallies
  // (the others kept them from when they were written, from the last section).
  const counted = new Uint8Array(chosen.length);
  if (last && cache.readWritten) {
    chosen.forEach((_, k) => {
      const before = befores[k];
      const bytes = before ? cache.readWritten?.(before.file, before.text) : null;
      if (!before || !bytes) return;
      const known = before.places?.section === last ? before.places : null;
      if (known) old[k] = { bytes, at: known.at, n: known.n, end: known.at[lastChunks] as number };
      else {
        counted[k] = 1;
        old[k] = { bytes, at: new Uint32Array(lastChunks + 1), n: new Uint32Array(lastChunks + 1), end: Buffer.byteLength(before.head, "utf8") };
      }
    });
  }
  const route1 = ROUTE.length + tail.length;
  const lastTallies = cache.sectionTallies;
  const anyOld = old.some((o) => o !== null);
  if (anyOld) {
    const anyCounted = counted.includes(1);
    const seen = new Uint32Array(chosen.length);
    for (let j = 0; j < lastTallies.length; j++) {
      const tally = lastTallies[j] as Tally;
      tally.index = j;
      tally.stamp = stamp;
      if (!anyCounted) continue;
      for (let k = 0; k < old.length; k++) {
        const o = old[k];
        if (o && counted[k]) {
          o.at[j] = o.end;
          o.n[j] = seen[k] as number;
        }
      }
      const { entries } = tally;
      for (let e = 0; e < entries.length; e += 3) {
        const k = slot[entries[e] as number] as number;
        const o = k < 0 ? null : old[k];
        if (!o || !counted[k]) continue;
        o.end += (entries[e + 1] as number) * route1 + (entries[e + 2] as number);
        seen[k] = (seen[k] as number) + (entries[e + 1] as number);
      }
    }
    old.forEach((o, k) => {
      if (!o || !counted[k]) return;
      o.at[lastChunks] = o.end;
      o.n[lastChunks] = seen[k] as number;
    });
    // A file that is not what the last section makes of the set (it cannot be, but its bytes came from a disk) is not copied from.
    old.forEach((o, k) => {
      if (o && (o.end + END.length !== o.bytes.length || !o.bytes.subarray(o.end).equals(END))) old[k] = null;
    });
  }

  // What each set has in this section, and which chunks' lines are read one by one: the chunks
  // not in the last section (rebuilt), and every chunk for a set not copied. A chunk the last
  // section had is found by walking the two sections side by side (the chunks a delta kept are
  // in the same order); for a set copied from its last file, what it has there is its places.
  const { chunks } = section;
  const rebuilt = new Uint8Array(chunks.length);
  const lastIndex = new Int32Array(chunks.length).fill(-1);
  const whole = Uint8Array.from(old, (o) => (o === null ? 1 : 0));
  const anyWhole = whole.includes(1);
  const copiedSets = Int32Array.from(old.flatMap((o, k) => (o ? [k] : [])));
  const routes = new Uint32Array(chosen.length);
  const prefixBytes = new Float64Array(chosen.length);
  const walked = new Uint32Array(chosen.length);
  const tallies = new Array<Tally>(chunks.length);
  let next = 0;
  for (let c = 0; c < chunks.length; c++) {
    const chunk = chunks[c] as SectionChunk;
    let j = -1;
    if (anyOld) {
      if (next < lastChunks && (last as ChunkedSection).chunks[next] === chunk) j = next;
      else {
        const known = cache.tallies.get(chunk);
        if (known && known.stamp === stamp) j = known.index;
      }
    }
    let tally: Tally;
    if (j >= 0) {
      next = j + 1;
      lastIndex[c] = j;
      tally = lastTallies[j] as Tally;
      for (let x = 0; x < copiedSets.length; x++) {
        const k = copiedSets[x] as number;
        const o = old[k] as OldFile;
        const count = (o.n[j + 1] as number) - (o.n[j] as number);
        routes[k] = (routes[k] as number) + count;
        prefixBytes[k] = (prefixBytes[k] as number) + (o.at[j + 1] as number) - (o.at[j] as number) - count * route1;
      }
    } else {
      rebuilt[c] = 1;
      tally = tallyOf(chunk);
    }
    tallies[c] = tally;
    if (j >= 0 && !anyWhole) continue;
    const { entries } = tally;
    for (let e = 0; e < entries.length; e += 3) {
      const k = slot[entries[e] as number] as number;
      if (k < 0 || (j >= 0 && !whole[k])) continue;
      routes[k] = (routes[k] as number) + (entries[e + 1] as number);
      prefixBytes[k] = (prefixBytes[k] as number) + (entries[e + 2] as number);
      walked[k] = (walked[k] as number) + (entries[e + 1] as number);
    }
  }
  const lines = linesOfSets(section, slot, walked, rebuilt, whole);

  const sets = new Map<string, RenderedSet>(incremental ? cache.sets : []);
  // The places of the sets not written now are of the last section: of no use from here on.
  for (const s of sets.values()) s.places = null;
  const checks: Record<string, CheckText> = {};
  chosen.forEach((of, k) => {
    const n = routes[k] as number;
    sets.delete(of.id);
    if (n === 0) return;
    const { name, head } = groupHead(of, of.family, n, titles);
    const headBytes = Buffer.from(head, "utf8");
    const size = headBytes.length + n * (ROUTE.length + tail.length) + (prefixBytes[k] as number) + END.length;
    // A kept line was checked when its set was last written; only the added ones are new.
    const from = {
      section,
      k,
      slot,
      tallyOf,
      stamp,
      kept: incremental ? delta.kept : null,
      rebuilt,
      lastIndex,
      lines: lines[k] as Uint32Array,
      old: old[k] as OldFile | null,
      // Kept for the next delta after a delta (a whole render's would be every set's, most never used).
      places: incremental,
    };
    const written = writeSet(from, headBytes, tail, size, {
      added: incremental ? delta.added : null,
      family: of.family,
    });
    const text = new RouteText(written.text, head, n);
    const places = written.places ? { section, ...written.places } : null;
    const made: RenderedSet = { of, name, file: staticFileName(out.split, name), head, text, places };
    const before = befores[k];
    if (before) checks[made.file] = { against: before.text, text: checkText(written.text, headBytes.length, n, written.added) };
    sets.set(of.id, made);
  });
  // Every file as this section makes it, once its bytes are let go.
  const { setOfTag } = cache;
  for (const s of sets.values()) s.text.remake(() => remade(section, s, setOfTag, tail, tallies));

  const names = new Set<string>();
  for (const family of [4, 6] as const) {
    const mine = [...sets.values()].filter((s) => s.of.family === family).sort((a, b) => compareSets(a.of.set, b.of.set));
    for (const s of mine) {
      if (names.has(s.name)) throw new RenderError(`prefixes.v${family}`, `two community sets hash to ${s.name}`);
      names.add(s.name);
      out.files[s.file] = s.text;
      out.lines.push(`include ${quoted(s.file, "statics")};`);
    }
  }
  cache.sets = sets;
  cache.sha256 = input.sha256;
  cache.section = section;
  cache.sectionTallies = tallies;
  return checks;
}

/** Tag `tag`'s community set; throws RenderError for a community the render refuses. */
function parseSet(tags: SectionTags, tag: number): SetOf {
  const text = tags.texts[tag] as string;
  const family = tags.v6[tag] ? 6 : 4;
  const communities = text === "" ? [] : text.split(",");
  const set = uniqueSorted(communities.map((c, j) => parseCommunity(c, `prefixes.v${family}[][1][${j}]`)));
  const key = set.map(communityText).join(",");
  return { id: `${family} ${key}`, family, key, set };
}

/** Set `s`'s file as `section` makes it (a set its last render did not write again: the same bytes). */
function remade(section: ChunkedSection, s: RenderedSet, setOfTag: readonly (SetOf | undefined)[], tail: Buffer, tallies: readonly Tally[]): Buffer {
  const slot = new Int32Array(section.tags.texts.length).fill(-1);
  setOfTag.forEach((of, tag) => {
    if (of?.id === s.of.id) slot[tag] = 0;
  });
  let routes = 0;
  let prefixBytes = 0;
  for (let c = 0; c < tallies.length; c++) {
    const { entries } = tallies[c] as Tally;
    for (let e = 0; e < entries.length; e += 3) {
      if (slot[entries[e] as number] !== 0) continue;
      routes += entries[e + 1] as number;
      prefixBytes += entries[e + 2] as number;
    }
  }
  const headBytes = Buffer.from(s.head, "utf8");
  const size = headBytes.length + routes * (ROUTE.length + tail.length) + prefixBytes + END.length;
  const lines = linesOfSets(section, slot, Uint32Array.of(routes), new Uint8Array(section.chunks.length), Uint8Array.of(1));
  const from = {
    section,
    k: 0,
    slot,
    tallyOf: () => tallies[0] as Tally,
    stamp: -1,
    kept: null,
    rebuilt: null,
    lastIndex: null,
    lines: lines[0] as Uint32Array,
    old: null,
    places: false,
  };
  return writeSet(from, headBytes, tail, size, null).text;
}

export { type ReadWritten, SectionStaticsCache };
