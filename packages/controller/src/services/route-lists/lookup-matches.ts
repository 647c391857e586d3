import type { LookupModuleRow } from "../../db/lookup.js";
import type { RpkiValidator } from "../../sources/rpki-source.js";
import type { RpkiState } from "../../sources/rpki-vrps.js";

// The parts of a lookup's matches (lookup.ts), made on every lookup.

/** The RFC 6811 state of a snapshot prefix whose origin is an ASN, when a VRP source is configured. */
export function rpkiOf(rpki: RpkiValidator | null | undefined, g: { source: string; origin: string }, prefix: string): { rpki?: RpkiState | "unavailable" } {
  if (!rpki || g.source !== "asn") return {};
  return { rpki: rpki.peek()?.validate(prefix, Number(g.origin)) ?? "unavailable" };
}

/** The module's part of every match. */
export const moduleFields = (m: LookupModuleRow) => ({
  module_id: m.id,
  module_name: m.name,
  module_type: m.type,
  enabled: m.enabled,
  community_id: m.community_id,
  community: m.community,
  community_title: m.community_title,
});

/** An entry-layer match: the entry's fields assigned onto the module's part (a spread made a second copy of it). */
export const entryMatch = (m: LookupModuleRow, entryId: string, value: string) =>
  Object.assign(moduleFields(m), { layer: "entry" as const, entry_id: entryId, value });
