import {
  applyTaggedDelta,
  type LineMap,
  type PagedLines,
  pagesOfLines,
  type SectionPages,
  type SectionStore,
  SectionTags,
  sectionStore,
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

/** Sections smaller than this get no room made ahead: allocating theirs costs next to nothing. */
const ROOM_MIN_BYTES = 4 * 1024 * 1024;
/** Tenants with room made ahead, at most (the most recent ones). */
const ROOMS_KEPT = 2;

/**
 * The kept sections in columns, by section key (section-cache.ts), least recently used out
 * first; and per tenant, room for its next full section made ahead. Allocating 33 MB and its
 * columns in the refresh made V8 collect the whole heap for the external memory (~200 ms of a
 * refresh of 1 % of 1.2M prefixes); made at a quiet moment after a commit instead, the refresh
 * writes into memory already there. A room is used once: it becomes the section's own memory,
 * which the caches and the streams serving it may still read, so nothing is ever written over.
 */
export function createSectionColumnsCache(maxBytes: number = SECTION_COLUMNS_BYTES) {
  const kept = createKeptBySize<SectionColumns>(maxBytes);
  const rooms = new Map<string, SectionStore>();
  return {
    ...kept,
    /** The room made for the tenant's next section, taken (null when there is none). */
    takeRoom(tenantId: string): SectionStore | null {
      const room = rooms.get(tenantId) ?? null;
      rooms.delete(tenantId);
      return room;
    },
    /** Makes room for the tenant's section after `section`, its pages written now. */
    prepareRoom(tenantId: string, section: TaggedSection): void {
      const room = rooms.get(tenantId);
      // One made before that holds this section's size still holds the next one's (sectionStore's margin).
      if (room && room.bytes.length >= section.bytes.length && room.starts.length > section.count) return;
      rooms.delete(tenantId);
      if (section.bytes.length < ROOM_MIN_BYTES) return;
      rooms.set(tenantId, sectionStore(section.bytes.length, section.count, true));
      for (const key of rooms.keys()) if (rooms.size > ROOMS_KEPT) rooms.delete(key);
    },
  };
}

export type SectionColumnsCache = ReturnType<typeof createSectionColumnsCache>;

/** The columns and pages of a whole section's bytes: every line read once (a process's first delta from a section it did not make). */
export function columnsOf(bytes: Buffer): SectionColumns {
  const section = tagSection(bytes, new SectionTags());
  return { section, pages: pagesOfLines(section) };
}

/** The section `delta` (rl-prefix-delta/1) makes of `base`, with its pages: exactly columnsOf(the new bytes); written into `room` when it fits. */
export function applyDeltaColumns(base: SectionColumns, delta: Uint8Array, room: SectionStore | null = null): SectionColumns {
  let lines: PagedLines | undefined;
  let map: LineMap | undefined;
  const next = applyTaggedDelta(
    base.section,
    delta,
    (_bytes, l, m) => {
      lines = l;
      map = m;
    },
    room,
  );
  return { section: next.section, pages: updatePages(base.pages, lines!, map!) };
}
