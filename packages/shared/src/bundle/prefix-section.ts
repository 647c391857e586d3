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

export function encodePrefixLines(lines: readonly string[]): Buffer {
  return Buffer.from(lines.length ? `${PREFIX_SECTION_FORMAT}\n${lines.join("\n")}\n` : `${PREFIX_SECTION_FORMAT}\n`, "utf8");
}

export function encodePrefixSection(prefixes: BundlePrefixes): Buffer {
  return encodePrefixLines(prefixLines(columnOf(prefixes.v4), columnOf(prefixes.v6)));
}

/** The lines of a section's bytes; throws `malformed` for anything but a section. */
export function splitSection(bytes: Uint8Array, format: string = PREFIX_SECTION_FORMAT): string[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new BundleError("malformed", "prefix section is not UTF-8", { cause });
  }
  if (!text.startsWith(`${format}\n`) || !text.endsWith("\n")) throw new BundleError("malformed", `prefix section is not ${format}`);
  const body = text.slice(format.length + 1, -1);
  return body === "" ? [] : body.split("\n");
}

/** The prefixes of a section, as the payload carries them; lines sharing communities share one array. */
export function decodePrefixSection(bytes: Uint8Array): BundlePrefixes {
  const out: BundlePrefixes = { v4: [], v6: [] };
  const shared = new Map<string, string[]>();
  for (const line of splitSection(bytes)) {
    const tab = line.indexOf("\t");
    if (tab <= 0) throw new BundleError("malformed", "prefix section line lacks its communities");
    const text = line.slice(tab + 1);
    let communities = shared.get(text);
    if (!communities) shared.set(text, (communities = text === "" ? [] : text.split(",")));
    const prefix = line.slice(0, tab);
    (prefix.includes(":") ? out.v6 : out.v4).push([prefix, communities]);
  }
  return out;
}

/**
 * The edit script from `base` to `next`, both in the same order (a revision's order): a line
 * of `next` whose prefix is in `base` is found there by a map, and every base line before it
 * that `next` does not hold is dropped. Linear in both lists.
 */
export function diffPrefixLines(base: readonly string[], next: readonly string[]): Buffer {
  const keyOf = (line: string) => line.slice(0, line.indexOf("\t"));
  const at = new Map<string, number>();
  for (let i = 0; i < base.length; i++) at.set(keyOf(base[i]!), i);
  const ops: string[] = [PREFIX_DELTA_FORMAT];
  let cursor = 0;
  let kept = 0;
  const flushKept = () => {
    if (kept) ops.push(`=${kept}`);
    kept = 0;
  };
  const drop = (n: number) => {
    if (n <= 0) return;
    flushKept();
    ops.push(`-${n}`);
  };
  for (const line of next) {
    const i = at.get(keyOf(line));
    if (i !== undefined && i >= cursor) {
      drop(i - cursor);
      cursor = i + 1;
      if (base[i] === line) {
        kept++;
        continue;
      }
      drop(1);
    }
    flushKept();
    ops.push(`+${line}`);
  }
  drop(base.length - cursor);
  flushKept();
  return Buffer.from(`${ops.join("\n")}\n`, "utf8");
}

/** `base`'s lines with the edit script applied; throws `malformed` for a script that does not fit the base. */
export function applyPrefixDelta(base: readonly string[], delta: Uint8Array): string[] {
  const out: string[] = [];
  let cursor = 0;
  for (const op of splitSection(delta, PREFIX_DELTA_FORMAT)) {
    const kind = op[0];
    if (kind === "+") {
      out.push(op.slice(1));
      continue;
    }
    const n = Number(op.slice(1));
    if ((kind !== "=" && kind !== "-") || !Number.isSafeInteger(n) || n < 1 || cursor + n > base.length) {
      throw new BundleError("malformed", `prefix delta step ${op.slice(0, 20)} does not fit a base of ${base.length} lines`);
    }
    if (kind === "=") for (let i = cursor; i < cursor + n; i++) out.push(base[i]!);
    cursor += n;
  }
  if (cursor !== base.length) throw new BundleError("malformed", `prefix delta covers ${cursor} of the base's ${base.length} lines`);
  return out;
}
