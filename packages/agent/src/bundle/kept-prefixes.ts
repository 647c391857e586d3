import { BundleError, type BundlePrefix, type BundlePrefixes, PREFIX_DELTA_FORMAT, PREFIX_SECTION_FORMAT, sha256Hex, splitSection } from "@rlc/shared/bundle";

// The prefix section of the revision BIRD runs, held in memory between syncs with an index of
// its lines, so a delta costs what it changes plus one hash of the rebuilt section: kept runs of
// lines are copied as byte ranges and their decoded prefixes taken over, and only the added
// lines are read. The same bytes are on disk (last-prefixes.txt) for a restart.

const HEAD = Buffer.from(`${PREFIX_SECTION_FORMAT}\n`, "utf8");

export interface KeptPrefixes {
  revision_id: number;
  /** Hex SHA-256 of `section`: what a delta's `base_prefixes_sha256` names. */
  sha256: string;
  section: Buffer;
  /** Where each line starts in `section`, and one more entry: the section's end. */
  starts: Uint32Array;
  /** Each line decoded, in the section's order; lines with the same communities share one array. */
  entries: BundlePrefix[];
  /** 1 where the line is an IPv6 prefix. */
  v6: Uint8Array;
  /** Communities as written → the array the entries share. */
  shared: Map<string, string[]>;
}

/**
 * A section read from its bytes (one full pass): after a full bundle, or at start from disk.
 * `decoded`, the payload's prefixes decoded from the same section, lends its tuples: the
 * strings the last render saw are then the very ones the next delta keeps, and the render's
 * check that a set did not change compares references, not texts.
 */
export function keepSection(revisionId: number, section: Buffer, decoded?: BundlePrefixes): KeptPrefixes {
  const lines = splitSection(section);
  const shared = new Map<string, string[]>();
  const starts = new Uint32Array(lines.length + 1);
  const entries = new Array<BundlePrefix>(lines.length);
  const v6 = new Uint8Array(lines.length);
  const texts = new Map<readonly string[], string>();
  const textOf = (c: readonly string[]) => texts.get(c) ?? (texts.set(c, c.join(",")).get(c) as string);
  const next = { v4: 0, v6: 0 };
  let at = HEAD.length;
  for (let i = 0; i < lines.length; i++) {
    starts[i] = at;
    at = section.indexOf(0x0a, at) + 1;
    const line = lines[i] as string;
    let entry = entryOf(line, shared);
    const family = entry[0].includes(":") ? "v6" : "v4";
    v6[i] = family === "v6" ? 1 : 0;
    const lent = decoded?.[family][next[family]++];
    if (lent && lent[0] === entry[0] && textOf(lent[1]) === line.slice(line.indexOf("\t") + 1)) entry = lent;
    entries[i] = entry;
  }
  starts[lines.length] = at;
  return { revision_id: revisionId, sha256: sha256Hex(section), section, starts, entries, v6, shared };
}

/**
 * The section of revision `revisionId` rebuilt from `kept` and an `rl-prefix-delta/1` edit
 * script, whose SHA-256 must be `sha256` (the signed `prefixes_sha256`); the added lines are
 * read only once it is. Throws as verifyBundle does: `digest_mismatch` for a script that does
 * not fit the base or rebuilds other bytes, `malformed` for a line that is not a prefix line.
 */
export function applyKeptDelta(kept: KeptPrefixes, revisionId: number, delta: Uint8Array, sha256: string): KeptPrefixes {
  let ops: string[];
  try {
    ops = splitSection(delta, PREFIX_DELTA_FORMAT);
  } catch (cause) {
    throw new BundleError("digest_mismatch", `the delta does not fit the base it names: ${(cause as Error).message}`, { cause });
  }
  const baseLines = kept.entries.length;
  const steps: { kind: "=" | "-" | "+"; n: number; line: string }[] = [];
  let count = 0;
  let cursor = 0;
  for (const op of ops) {
    const kind = op[0];
    if (kind === "+") {
      steps.push({ kind, n: 1, line: op.slice(1) });
      count++;
      continue;
    }
    const n = Number(op.slice(1));
    if ((kind !== "=" && kind !== "-") || !Number.isSafeInteger(n) || n < 1 || cursor + n > baseLines) {
      throw new BundleError("digest_mismatch", `the delta does not fit the base it names: step ${op.slice(0, 20)} on ${baseLines} lines`);
    }
    steps.push({ kind, n, line: "" });
    if (kind === "=") count += n;
    cursor += n;
  }
  if (cursor !== baseLines) throw new BundleError("digest_mismatch", `the delta does not fit the base it names: it covers ${cursor} of ${baseLines} lines`);

  // The section's size first, then one buffer written in place: a kept run is one copy of the
  // base's bytes, an added line is written where it goes (no piece per step to join after).
  let size = HEAD.length;
  cursor = 0;
  for (const step of steps) {
    if (step.kind === "+") size += Buffer.byteLength(step.line, "utf8") + 1;
    else {
      if (step.kind === "=") size += (kept.starts[cursor + step.n] as number) - (kept.starts[cursor] as number);
      cursor += step.n;
    }
  }
  const section = Buffer.allocUnsafe(size);
  HEAD.copy(section, 0);
  const starts = new Uint32Array(count + 1);
  const entries = new Array<BundlePrefix>(count);
  const v6 = new Uint8Array(count);
  const added: { at: number; line: string }[] = [];
  let at = HEAD.length;
  let j = 0;
  cursor = 0;
  for (const step of steps) {
    if (step.kind === "+") {
      starts[j] = at;
      added.push({ at: j++, line: step.line });
      at += section.write(step.line, at, "utf8");
      section[at++] = 0x0a;
      continue;
    }
    if (step.kind === "=") {
      const from = kept.starts[cursor] as number;
      const to = kept.starts[cursor + step.n] as number;
      kept.section.copy(section, at, from, to);
      v6.set(kept.v6.subarray(cursor, cursor + step.n), j);
      const shift = at - from;
      for (let i = cursor; i < cursor + step.n; i++) {
        starts[j] = (kept.starts[i] as number) + shift;
        entries[j++] = kept.entries[i] as BundlePrefix;
      }
      at = to + shift;
    }
    cursor += step.n;
  }
  starts[count] = at;
  if (sha256Hex(section) !== sha256) throw new BundleError("digest_mismatch", "the prefixes rebuilt from the delta are not the revision's");
  const shared = new Map(kept.shared);
  for (const { at: i, line } of added) {
    const entry = entryOf(line, shared);
    entries[i] = entry;
    v6[i] = entry[0].includes(":") ? 1 : 0;
  }
  return { revision_id: revisionId, sha256, section, starts, entries, v6, shared };
}

/** The prefixes as the payload carries them (as decodePrefixSection gives them). */
export function keptPrefixes(kept: KeptPrefixes): BundlePrefixes {
  // A revision's section has its IPv4 lines first: two slices, no pass over the entries.
  const firstV6 = kept.v6.indexOf(1);
  if (firstV6 < 0) return { v4: kept.entries.slice(), v6: [] };
  if (kept.v6.indexOf(0, firstV6) < 0) return { v4: kept.entries.slice(0, firstV6), v6: kept.entries.slice(firstV6) };
  const out: BundlePrefixes = { v4: [], v6: [] };
  for (const entry of kept.entries) (entry[0].includes(":") ? out.v6 : out.v4).push(entry);
  return out;
}

/** One line of a section, `<prefix>\t<community>,…`, as decodePrefixSection reads it. */
function entryOf(line: string, shared: Map<string, string[]>): BundlePrefix {
  const tab = line.indexOf("\t");
  if (tab <= 0) throw new BundleError("malformed", "prefix section line lacks its communities");
  const text = line.slice(tab + 1);
  let communities = shared.get(text);
  if (!communities) shared.set(text, (communities = text === "" ? [] : text.split(",")));
  return [line.slice(0, tab), communities];
}
