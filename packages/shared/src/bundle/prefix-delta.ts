import { comparePrefixes, newTables, type PrefixTable, type PrefixTables, pushPrefixText } from "../prefix/index.js";
import { BundleError } from "./errors.js";
import { PREFIX_DELTA_FORMAT, PREFIX_SECTION_FORMAT, type PrefixColumn, splitSection } from "./prefix-section.js";

/*
 * Delta sections: the edit script from one revision's prefix lines to another's, and its
 * application (the agent's side).
 *
 * Both revisions list their prefixes in the same order (IPv4 first, then by address and
 * length), so the script comes from one walk over the two lists together: equal lines (99 %
 * of a 1 % change) are kept without a look at what they hold, and only where the lists part
 * are the two prefixes parsed and put in that order. Whatever the input, the script rebuilds
 * `next` exactly (a line is kept only when it is the same in both); the order only decides how
 * small the script is, so lines that turn out not to be in order hand the work to the map of
 * the base's prefixes, which does not depend on it.
 */

/** What a diff reads of a list of lines: how many, line i and its prefix. */
interface Lines {
  length: number;
  prefixAt(i: number): string;
  lineAt(i: number): string;
}

/** The script's steps, with runs of keeps and of drops each written as one step. */
class Script {
  private readonly ops: string[] = [PREFIX_DELTA_FORMAT];
  private kind = "";
  private count = 0;

  step(kind: "=" | "-"): void {
    if (kind !== this.kind) this.flush();
    this.kind = kind;
    this.count++;
  }

  skip(kind: "=" | "-", n: number): void {
    if (n <= 0) return;
    if (kind !== this.kind) this.flush();
    this.kind = kind;
    this.count += n;
  }

  add(line: string): void {
    this.flush();
    this.ops.push(`+${line}`);
  }

  bytes(): Buffer {
    this.flush();
    return Buffer.from(`${this.ops.join("\n")}\n`, "utf8");
  }

  private flush(): void {
    if (this.count) this.ops.push(`${this.kind}${this.count}`);
    this.kind = "";
    this.count = 0;
  }
}

/**
 * The prefixes one list's walk has parsed, in the order of revisions (the prefix module's
 * comparePrefixes, IPv4 before IPv6). Each new one must come after the one before: a list that
 * is not in order is found out where it matters, at the lines the walk compares.
 */
class ParsedSide {
  private slots: PrefixTables[] = [newTables(1, 1), newTables(1, 1)];
  private current: PrefixTable | null = null;
  private index = -1;
  private slot = 0;

  /** Prefix i of the list, parsed; null when it is no prefix or not after the one parsed before. */
  at(i: number, text: string): PrefixTable | null {
    if (i === this.index) return this.current;
    this.slot ^= 1;
    const tables = this.slots[this.slot]!;
    tables.v4.count = 0;
    tables.v6.count = 0;
    let parsed: PrefixTable;
    try {
      parsed = pushPrefixText(text, tables);
    } catch {
      return null;
    }
    if (this.current && orderOf(this.current, parsed) >= 0) return null;
    this.current = parsed;
    this.index = i;
    return parsed;
  }
}

/** The order of two one-prefix tables' prefixes: IPv4 first, then by address and length. */
const orderOf = (a: PrefixTable, b: PrefixTable) => (a.family !== b.family ? a.family - b.family : comparePrefixes(a, 0, b, 0));

/** The merge walk; null when the lines it compares show that a list is not in order. */
function walk(base: Lines, next: Lines, same: (i: number, j: number) => boolean): Buffer | null {
  const script = new Script();
  return walkInto(script, base, next, same, 0, base.length, 0, next.length) ? script.bytes() : null;
}

/** The merge walk over base lines [i, iEnd) and next lines [j, jEnd), onto `script`; false when a list is found out of order. */
function walkInto(
  script: Script,
  base: Lines,
  next: Lines,
  same: (i: number, j: number) => boolean,
  i: number,
  iEnd: number,
  j: number,
  jEnd: number,
): boolean {
  const left = new ParsedSide();
  const right = new ParsedSide();
  while (i < iEnd && j < jEnd) {
    if (same(i, j)) {
      script.step("=");
      i++;
      j++;
      continue;
    }
    const a = left.at(i, base.prefixAt(i));
    const b = right.at(j, next.prefixAt(j));
    if (!a || !b) return false;
    const c = orderOf(a, b);
    if (c <= 0) {
      // Not in next (or re-tagged there: dropped here, added below).
      script.step("-");
      i++;
    }
    if (c >= 0) {
      script.add(next.lineAt(j));
      j++;
    }
  }
  // The rest of the longer list: parsed too, so that its order is checked like the rest.
  for (; i < iEnd; i++) {
    if (!left.at(i, base.prefixAt(i))) return false;
    script.step("-");
  }
  for (; j < jEnd; j++) {
    if (!right.at(j, next.prefixAt(j))) return false;
    script.add(next.lineAt(j));
  }
  return true;
}

/**
 * The script for lists in any order: each line of `next` whose prefix is in `base` after the
 * last line used is found there by a map; the base lines skipped on the way are dropped.
 */
function mapped(base: Lines, next: Lines, same: (i: number, j: number) => boolean): Buffer {
  const at = new Map<string, number>();
  for (let i = 0; i < base.length; i++) at.set(base.prefixAt(i), i);
  const script = new Script();
  let cursor = 0;
  for (let j = 0; j < next.length; j++) {
    const i = at.get(next.prefixAt(j));
    if (i !== undefined && i >= cursor) {
      script.skip("-", i - cursor);
      cursor = i + 1;
      if (same(i, j)) {
        script.step("=");
        continue;
      }
      script.step("-");
    }
    script.add(next.lineAt(j));
  }
  script.skip("-", base.length - cursor);
  return script.bytes();
}

const diff = (base: Lines, next: Lines, same: (i: number, j: number) => boolean) => walk(base, next, same) ?? mapped(base, next, same);

const lineList = (lines: readonly string[]): Lines => ({
  length: lines.length,
  prefixAt: (i) => {
    const line = lines[i]!;
    const tab = line.indexOf("\t");
    return tab < 0 ? line : line.slice(0, tab);
  },
  lineAt: (i) => lines[i]!,
});

/** The edit script from `base` to `next`, lines of two sections (prefixLines). */
export function diffPrefixLines(base: readonly string[], next: readonly string[]): Buffer {
  return diff(lineList(base), lineList(next), (i, j) => base[i] === next[j]);
}

/** Both families of a revision, IPv4 first. */
export interface PrefixColumns {
  v4: PrefixColumn;
  v6: PrefixColumn;
}

/**
 * Both families as one list whose communities are text, each communities array joined once:
 * a revision has a handful of them, shared by its prefixes.
 */
function columnList(c: PrefixColumns, joined: Map<readonly string[], string>): Lines & { textAt(i: number): string } {
  const n4 = c.v4.length;
  const textAt = (i: number) => {
    const communities = i < n4 ? c.v4.communitiesAt(i) : c.v6.communitiesAt(i - n4);
    let text = joined.get(communities);
    if (text === undefined) joined.set(communities, (text = communities.join(",")));
    return text;
  };
  const prefixAt = (i: number) => (i < n4 ? c.v4.prefixAt(i) : c.v6.prefixAt(i - n4));
  return { length: n4 + c.v6.length, prefixAt, textAt, lineAt: (i) => `${prefixAt(i)}\t${textAt(i)}` };
}

/**
 * diffPrefixLines(prefixLines(base), prefixLines(next)) without making the lines: equal
 * prefixes with equal communities are kept as they are, and only the added lines are written.
 */
export function diffPrefixColumns(base: PrefixColumns, next: PrefixColumns): Buffer {
  const joined = new Map<readonly string[], string>();
  const b = columnList(base, joined);
  const n = columnList(next, joined);
  return diff(b, n, (i, j) => b.prefixAt(i) === n.prefixAt(j) && b.textAt(i) === n.textAt(j));
}

/** Base lines [from, to) that became next lines [at, at + count): outside such runs two sections hold the same lines. */
export interface LineSplice {
  from: number;
  to: number;
  at: number;
  count: number;
}

/**
 * diffPrefixColumns(base, next) when the caller knows where the two differ (`splices`,
 * ascending, in lines of the whole section: IPv4 then IPv6): the lines between the splices are
 * kept without a look at them, and only the spliced runs are walked, so a change of 1 % of a
 * million prefixes costs its own lines. The same script the whole walk gives for lists in order;
 * splices that do not add up to the two lists (or lists out of order) get the whole diff.
 */
export function diffPrefixSplices(base: PrefixColumns, next: PrefixColumns, splices: readonly LineSplice[]): Buffer {
  const joined = new Map<readonly string[], string>();
  const b = columnList(base, joined);
  const n = columnList(next, joined);
  const same = (i: number, j: number) => b.prefixAt(i) === n.prefixAt(j) && b.textAt(i) === n.textAt(j);
  const script = new Script();
  let i = 0;
  let j = 0;
  for (const s of splices) {
    const fits = s.from >= i && s.to >= s.from && s.to <= b.length && s.count >= 0 && s.at - j === s.from - i && s.at + s.count <= n.length;
    if (!fits) return diff(b, n, same);
    script.skip("=", s.from - i);
    if (!walkInto(script, b, n, same, s.from, s.to, s.at, s.at + s.count)) return diff(b, n, same);
    i = s.to;
    j = s.at + s.count;
  }
  if (b.length - i !== n.length - j) return diff(b, n, same);
  script.skip("=", b.length - i);
  return script.bytes();
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

const NL = 0x0a;
const SECTION_HEAD = Buffer.from(`${PREFIX_SECTION_FORMAT}\n`, "latin1");
const DELTA_HEAD = Buffer.from(`${PREFIX_DELTA_FORMAT}\n`, "latin1");

function checkFramed(bytes: Buffer, head: Buffer, format: string): void {
  if (bytes.length < head.length || !bytes.subarray(0, head.length).equals(head) || bytes[bytes.length - 1] !== NL) {
    throw new BundleError("malformed", `prefix section is not ${format}`);
  }
}

/**
 * The full section that the edit script makes of the base section, as bytes: what
 * `encodePrefixLines(applyPrefixDelta(splitSection(base), delta))` gives, without decoding the
 * base into lines and encoding them again. A run of kept lines is one copy of the base's bytes,
 * an added line one copy of the script's. Throws `malformed` for a script that does not fit.
 */
export function applyPrefixDeltaBytes(baseSection: Uint8Array, delta: Uint8Array): Buffer {
  const base = Buffer.from(baseSection.buffer, baseSection.byteOffset, baseSection.length);
  const script = Buffer.from(delta.buffer, delta.byteOffset, delta.length);
  checkFramed(base, SECTION_HEAD, PREFIX_SECTION_FORMAT);
  checkFramed(script, DELTA_HEAD, PREFIX_DELTA_FORMAT);
  // The scan for the base's newlines reads a plain Uint8Array: faster than through a Buffer.
  const lines = new Uint8Array(base.buffer, base.byteOffset, base.length);
  // First the pieces of the result (a buffer and a byte range each), then one copy into its size.
  const from: Buffer[] = [SECTION_HEAD];
  const starts: number[] = [0];
  const ends: number[] = [SECTION_HEAD.length];
  let size = SECTION_HEAD.length;
  let at = SECTION_HEAD.length; // where the base's next line starts
  let line = 0;
  for (let p = DELTA_HEAD.length; p < script.length; ) {
    const end = script.indexOf(NL, p);
    const kind = script[p];
    if (kind === 0x2b) {
      // "+<line>\n": the line and its newline, as the script has them.
      from.push(script);
      starts.push(p + 1);
      ends.push(end + 1);
      size += end - p;
    } else {
      // A count: decimal digits only (anything else, or a count past any base, is no step).
      let n = 0;
      for (let k = p + 1; k < end && n >= 0; k++) {
        const d = script[k]! - 48;
        n = d < 0 || d > 9 || n > 2 ** 40 ? -1 : n * 10 + d;
      }
      if ((kind !== 0x3d && kind !== 0x2d) || end === p + 1 || n < 1) {
        throw new BundleError("malformed", `prefix delta step ${script.toString("utf8", p, Math.min(end, p + 20))} is not one`);
      }
      // The base's bytes from `at` to the end of its n-th line from there.
      // One native search a line (a byte-by-byte loop in JS took 0.34 s over a 32 MB section).
      let q = at - 1;
      let left = n;
      while (left > 0) {
        const nl = lines.indexOf(NL, q + 1);
        if (nl < 0) break;
        q = nl;
        left--;
      }
      if (left !== 0) throw new BundleError("malformed", `prefix delta step ${kind === 0x3d ? "=" : "-"}${n} does not fit the base after its line ${line}`);
      if (kind === 0x3d) {
        from.push(base);
        starts.push(at);
        ends.push(q + 1);
        size += q + 1 - at;
      }
      at = q + 1;
      line += n;
    }
    p = end + 1;
  }
  if (at !== base.length) throw new BundleError("malformed", `prefix delta covers ${line} lines, not all of the base's`);
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (let k = 0; k < from.length; k++) o += from[k]!.copy(out, o, starts[k], ends[k]);
  return out;
}
