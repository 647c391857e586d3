import type { PrefixTable } from "@rlc/shared/prefix";
import { FAMS, type Fam } from "./revision-blocks.js";
import type { ContentSplice } from "./revision-build.js";
import type { RevisionContent } from "./revision-content.js";
import type { DigestGroups } from "./revision-digest.js";
import type { FamilyLines } from "./revision-lines.js";

/** A revision's content with what an incremental rebuild keeps of it: its prefixes parsed, its digest's lines and groups, how many prefixes each tag has. */
export interface SplicedContent {
  content: RevisionContent;
  tables: Record<Fam, PrefixTable>;
  lines: Record<Fam, FamilyLines>;
  /** The digest's groups (revision-digest.ts). */
  groups: Record<Fam, DigestGroups>;
  perTag: Int32Array;
  /**
   * Where each tag's first prefix is (IPv4 positions, then IPv6 ones after the IPv4 count):
   * ascending, as tags are numbered in order of first appearance.
   */
  firstAt: Float64Array;
}

/** Where each tag of `content` first appears (SplicedContent.firstAt): one pass, made by the full build. */
export function firstAppearances(content: RevisionContent): Float64Array {
  const out = new Float64Array(content.tags.length).fill(-1);
  let seen = 0;
  let base = 0;
  for (const fam of FAMS) {
    const { tags, length } = content[fam];
    for (let i = 0; i < length && seen < out.length; i++) {
      if (out[tags[i]!]! < 0) {
        out[tags[i]!] = base + i;
        seen++;
      }
    }
    base += length;
  }
  return out;
}

/** One family of a splice: its prefixes (the kept runs and the parts' ones), the ranges replaced, its length. */
export interface SplicedFamily {
  table: PrefixTable;
  change: ContentSplice[];
  length: number;
}
