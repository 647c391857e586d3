import {
  applyChunkedDelta,
  type ChunkedChange,
  type ChunkedSection,
  type ChunkedTarget,
  chunkSection,
  pagesOfLines,
  type SectionPages,
  type SectionTags,
  sha256Hex,
  tagSection,
} from "@rlc/shared/bundle";

// The prefix section of the revision BIRD runs, held in memory between syncs as chunks that
// revisions share (@rlc/shared's chunked section): each chunk's lines with where each starts, its
// prefix's length, its community set's number, which lines end a page (rl-prefix-pages/1), and
// its pages' digests. A delta rebuilds only the chunks it touches and hashes only their pages;
// no string or array a prefix is made, and the render writes the community sets the delta
// touched from the same bytes. On disk for a restart: the section as a base and the deltas
// applied since (../state.ts).

export interface KeptPrefixes {
  revision_id: number;
  /** Hex SHA-256 of the section: what a delta's `base_prefixes_sha256` names. */
  sha256: string;
  section: ChunkedSection;
}

/** What a delta bundle's signed header says of the section it rebuilds: its revision, `prefixes_sha256` and `prefixes_pages_sha256` when signed. */
export interface DeltaTarget extends ChunkedTarget {
  revisionId: number;
}

/** What a delta did: the tags it touched, the lines it added and the runs it kept, over the section with `baseSha256`. */
export interface KeptDelta extends Omit<ChunkedChange, "section"> {
  baseSha256: string;
}

/**
 * A whole section, read once (after a full bundle, or at start from disk), with its page digests
 * (those a full bundle signed, or hashed now); null when it is not one the columns take (not
 * ASCII, say: the generic decoder reads it, and the next bundle comes whole).
 */
export function keepSection(revisionId: number, bytes: Uint8Array, tags: SectionTags, pages: SectionPages | null = null): KeptPrefixes | null {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  try {
    const tagged = tagSection(buffer, tags);
    return { revision_id: revisionId, sha256: sha256Hex(buffer), section: chunkSection(tagged, pages ?? pagesOfLines(tagged)) };
  } catch {
    return null;
  }
}

/**
 * The section `target` names rebuilt from `kept` and an `rl-prefix-delta/1` edit script, checked
 * before any added line is read: by its page root when the header signs one (only the pages of
 * the chunks the delta touched are hashed; the whole section's SHA-256 is then the signed one,
 * bound to the same bytes by the root), else by the SHA-256 of the whole. Throws as verifyBundle
 * does: `digest_mismatch` for a script that does not fit the base or rebuilds other bytes,
 * `malformed` for an added line that is not a prefix line.
 */
export function applyKeptDelta(kept: KeptPrefixes, delta: Uint8Array, target: DeltaTarget): { kept: KeptPrefixes; delta: KeptDelta } {
  const change = applyChunkedDelta(kept.section, delta, target);
  return {
    kept: { revision_id: target.revisionId, sha256: target.sha256, section: change.section },
    delta: { baseSha256: kept.sha256, changedTags: change.changedTags, added: change.added, kept: change.kept },
  };
}

/** The section's prefixes counted by family and communities (what the probation's export rule reads), one pass over the tags. */
export function tallyOfKept(kept: KeptPrefixes): { v6: boolean; communities: readonly string[]; count: number }[] {
  const { chunks, tags } = kept.section;
  const counts = new Uint32Array(tags.texts.length);
  for (const { tagOf, count } of chunks) for (let i = 0; i < count; i++) counts[tagOf[i] as number] = (counts[tagOf[i] as number] as number) + 1;
  const tally: { v6: boolean; communities: readonly string[]; count: number }[] = [];
  counts.forEach((n, tag) => {
    const text = tags.texts[tag] as string;
    if (n > 0) tally.push({ v6: tags.v6[tag] === 1, communities: text === "" ? [] : text.split(","), count: n });
  });
  return tally;
}
