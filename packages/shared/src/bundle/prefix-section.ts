import { BundleError } from "./errors.js";
import type { BundlePrefix, BundlePrefixes } from "./payload.js";

/**
 * The prefixes of a revision as one run of text lines: `rl-prefixes/1`, then one line per
 * prefix, `<prefix>\t<community>,<community>`, the IPv4 prefixes first, each family in the
 * revision's order (address, then length). About 24 bytes a /24 where the JSON tuple in base64
 * took 43, and the same bytes for every speaker of the revision: it is encoded and hashed once
 * per revision, and its SHA-256 is what the bundle's signature covers.
 */
export const PREFIX_SECTION_FORMAT = "rl-prefixes/1";
/**
 * The changes from one prefix section to another, as an edit script over its lines:
 * `rl-prefix-delta/1`, then `=N` (keep the next N lines of the base), `-N` (drop the next N)
 * or `+<line>` (a line of the new section, in place). A re-tagged prefix is a drop and an add.
 */
export const PREFIX_DELTA_FORMAT = "rl-prefix-delta/1";

/** A family's prefixes and communities, indexable without building a tuple per prefix. */
export interface PrefixColumn {
  length: number;
  prefixAt(i: number): string;
  communitiesAt(i: number): readonly string[];
}

export const columnOf = (list: readonly BundlePrefix[]): PrefixColumn => ({
  length: list.length,
  prefixAt: (i) => list[i]![0],
  communitiesAt: (i) => list[i]![1],
});

/** The lines of a section, without its first line; what {@link diffPrefixLines} compares. */
export function prefixLines(v4: PrefixColumn, v6: PrefixColumn): string[] {
  const lines = new Array<string>(v4.length + v6.length);
  let n = 0;
  // One joined string per distinct communities array: a revision has a handful, not one per prefix.
  const joined = new Map<readonly string[], string>();
  for (const column of [v4, v6]) {
    for (let i = 0; i < column.length; i++) {
      const communities = column.communitiesAt(i);
      let text = joined.get(communities);
      if (text === undefined) joined.set(communities, (text = communities.join(",")));
      lines[n++] = `${column.prefixAt(i)}\t${text}`;
    }
  }
  return lines;
}

/**
 * A section's bytes, written into one buffer that grows as needed: for each line its text
 * where it goes, then the bytes of its tail (the communities and the newline, encoded once per
 * distinct text), instead of a string per line joined into one 12 MB string and that encoded
 * (measured on 491k prefixes: 60-200 ms against 200-290 ms, and no million short-lived
 * strings for the collector). UTF-8 takes at most 3 bytes a UTF-16 unit, so with that much
 * room a write is never cut.
 */
function writeSection(count: number, textAt: (i: number) => string, tailAt: (i: number) => Buffer): Buffer {
  let out = Buffer.allocUnsafe(Math.max(1024, count * 24));
  let o = out.write(`${PREFIX_SECTION_FORMAT}\n`, 0, "latin1");
  for (let i = 0; i < count; i++) {
    const text = textAt(i);
    const tail = tailAt(i);
    if (o + text.length * 3 + tail.length > out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, o + text.length * 3 + tail.length));
      out.copy(bigger, 0, 0, o);
      out = bigger;
    }
    o += out.write(text, o, "utf8");
    // A few bytes: a loop costs less than a call to copy them.
    for (let k = 0; k < tail.length; k++) out[o++] = tail[k]!;
  }
  // A copy of the exact size: the spare room would otherwise stay allocated as long as the section.
  return Buffer.from(out.subarray(0, o));
}

const NEWLINE = Buffer.from("\n", "latin1");

export function encodePrefixLines(lines: readonly string[]): Buffer {
  return writeSection(
    lines.length,
    (i) => lines[i]!,
    () => NEWLINE,
  );
}

/** encodePrefixLines(prefixLines(v4, v6)) without the array of lines in between. */
export function encodePrefixColumns(v4: PrefixColumn, v6: PrefixColumn): Buffer {
  // "\t<communities>\n" as bytes, once per distinct communities array.
  const tails = new Map<readonly string[], Buffer>();
  const tailOf = (communities: readonly string[]) => {
    let tail = tails.get(communities);
    if (tail === undefined) tails.set(communities, (tail = Buffer.from(`\t${communities.join(",")}\n`, "utf8")));
    return tail;
  };
  const n4 = v4.length;
  return writeSection(
    n4 + v6.length,
    (i) => (i < n4 ? v4.prefixAt(i) : v6.prefixAt(i - n4)),
    (i) => tailOf(i < n4 ? v4.communitiesAt(i) : v6.communitiesAt(i - n4)),
  );
}

export function encodePrefixSection(prefixes: BundlePrefixes): Buffer {
  return encodePrefixColumns(columnOf(prefixes.v4), columnOf(prefixes.v6));
}

/** A section's text, checked: UTF-8, its first line `format`, ending with a newline; throws `malformed` else. */
function sectionText(bytes: Uint8Array, format: string): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new BundleError("malformed", "prefix section is not UTF-8", { cause });
  }
  if (!text.startsWith(`${format}\n`) || !text.endsWith("\n")) throw new BundleError("malformed", `prefix section is not ${format}`);
  return text;
}

/** The lines of a section's bytes; throws `malformed` for anything but a section. */
export function splitSection(bytes: Uint8Array, format: string = PREFIX_SECTION_FORMAT): string[] {
  const body = sectionText(bytes, format).slice(format.length + 1, -1);
  return body === "" ? [] : body.split("\n");
}

/** How many distinct communities texts decodePrefixSection compares a line with before the map. */
const KNOWN_TEXTS = 8;

/**
 * The prefixes of a section, as the payload carries them; lines sharing communities share one
 * array. One pass over the text: a line's communities are matched in place against the few
 * texts seen already (a revision has a handful), so a line costs one string (its prefix) and
 * its tuple, not the line, its two parts and a map lookup.
 */
export function decodePrefixSection(bytes: Uint8Array): BundlePrefixes {
  const text = sectionText(bytes, PREFIX_SECTION_FORMAT);
  const out: BundlePrefixes = { v4: [], v6: [] };
  const shared = new Map<string, string[]>();
  const known: { text: string; list: string[] }[] = [];
  for (let at = PREFIX_SECTION_FORMAT.length + 1; at < text.length; ) {
    const nl = text.indexOf("\n", at);
    const tab = text.indexOf("\t", at);
    if (tab <= at || tab > nl) throw new BundleError("malformed", "prefix section line lacks its communities");
    let communities: string[] | undefined;
    for (const k of known) {
      if (k.text.length === nl - tab - 1 && text.startsWith(k.text, tab + 1)) {
        communities = k.list;
        break;
      }
    }
    if (!communities) {
      const t = text.slice(tab + 1, nl);
      communities = shared.get(t);
      if (!communities) {
        shared.set(t, (communities = t === "" ? [] : t.split(",")));
        if (known.length < KNOWN_TEXTS) known.push({ text: t, list: communities });
      }
    }
    const prefix = text.slice(at, tab);
    (prefix.includes(":") ? out.v6 : out.v4).push([prefix, communities]);
    at = nl + 1;
  }
  return out;
}

/**
 * The prefixes of a section the reader checked already (its SHA-256 and its lines), decoded
 * only when something reads them: an agent that renders from the section's bytes and applies
 * deltas to them holds 34 MB for 1.2M prefixes, not the ~100 MB of their tuples. Given as a
 * function, the bytes themselves are made only then (a chunked section joined).
 */
export function lazyPrefixes(bytes: Uint8Array | (() => Uint8Array)): BundlePrefixes {
  let decoded: BundlePrefixes | null = null;
  const get = () => (decoded ??= decodePrefixSection(typeof bytes === "function" ? bytes() : bytes));
  return Object.defineProperties({} as BundlePrefixes, {
    v4: { enumerable: true, get: () => get().v4 },
    v6: { enumerable: true, get: () => get().v6 },
  });
}
