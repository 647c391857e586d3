import {
  applyTaggedDelta,
  type LineMap,
  type PagedLines,
  pagesOfLines,
  type SectionPages,
  SectionTags,
  type TaggedSection,
  tagSection,
  updatePages,
} from "@rlc/shared/bundle";
import { createKeptBySize } from "./section-cache.js";

/**
 * A full prefix section in columns (where each line starts, its page ends: tagged-section.ts)
 * with its page digests: what the next revision's full section is made from by the delta between
 * them, as an agent makes it, copying the kept lines' bytes as runs and hashing only the pages the
 * delta touched. Writing the 33 MB section of 1.2M prefixes again and hashing every page took
 * most of a refresh that changed 1 % of them.
 */
export interface SectionColumns {
  section: TaggedSection;
  pages: SectionPages;
}

/** Sections kept in columns per process by default: the last one of a 1.2M-prefix tenant and its successor, or several smaller ones. */
export const SECTION_COLUMNS_BYTES = 128 * 1024 * 1024;

/** What a section in columns holds: its bytes and about ten bytes a line of columns. */
export const columnsSize = (size: number, lines: number) => size + lines * 10;

/** The kept sections in columns, by section key (section-cache.ts), least recently used out first. */
export function createSectionColumnsCache(maxBytes: number = SECTION_COLUMNS_BYTES) {
  return createKeptBySize<SectionColumns>(maxBytes);
}

export type SectionColumnsCache = ReturnType<typeof createSectionColumnsCache>;

/** The columns and pages of a whole section's bytes: every line read once (a process's first delta from a section it did not make). */
export function columnsOf(bytes: Buffer): SectionColumns {
  const section = tagSection(bytes, new SectionTags());
  return { section, pages: pagesOfLines(section) };
}

/** The section `delta` (rl-prefix-delta/1) makes of `base`, with its pages: exactly columnsOf(the new bytes). */
export function applyDeltaColumns(base: SectionColumns, delta: Uint8Array): SectionColumns {
  let lines: PagedLines | undefined;
  let map: LineMap | undefined;
  const next = applyTaggedDelta(base.section, delta, (_bytes, l, m) => {
    lines = l;
    map = m;
  });
  return { section: next.section, pages: updatePages(base.pages, lines!, map!) };
}
