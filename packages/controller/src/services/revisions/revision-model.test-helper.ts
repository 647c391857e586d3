import { aggregateTagged, containsPrefix, removeBogons } from "@rlc/shared/prefix";
import fc from "fast-check";
import type { BogonSettings, ModuleInput } from "./revision-build.js";
import type { RevisionEntry } from "./revision-content.js";

// The revision build's brute-force model, for the property tests of the full build
// (revision-build.test.ts) and of the incremental one (revision-incremental.test.ts).

/** Prefixes of small address spaces, 11.0.0.0/24 (lengths 24..32) and 2a00::/120 (120..128), so that random ones nest and touch. */
export const smallV4 = fc
  .record({ off: fc.integer({ min: 0, max: 255 }), len: fc.integer({ min: 24, max: 32 }) })
  .map(({ off, len }) => `11.0.0.${off & ~(2 ** (32 - len) - 1)}/${len}`);
export const smallV6 = fc
  .record({ off: fc.integer({ min: 0, max: 255 }), len: fc.integer({ min: 120, max: 128 }) })
  .map(({ off, len }) => `2a00::${(off & ~(2 ** (128 - len) - 1)).toString(16)}/${len}`);

export const settingsOf = (b: BogonSettings) => ({
  minLengthV4: b.min_prefix_length_v4,
  minLengthV6: b.min_prefix_length_v6,
  ...(b.exclude_prefixes ? { exclude: b.exclude_prefixes } : {}),
});

/** The attribution, literally: every (module prefix, announced prefix) pair. */
export function modelEntries(modules: ModuleInput[], bird: BogonSettings): RevisionEntry[] {
  const filtered = modules.map((m) => ({ id: m.module_id, prefixes: removeBogons(m.prefixes, settingsOf(bird)).prefixes }));
  const out = aggregateTagged(modules.map((m, i) => ({ prefixes: filtered[i]!.prefixes, communities: m.community ? [m.community] : [] })));
  const longest = (q: string) => {
    let best: string | undefined;
    for (const o of out) if (containsPrefix(o.prefix, q) && (!best || Number(o.prefix.split("/")[1]) > Number(best.split("/")[1]))) best = o.prefix;
    return best;
  };
  return out.map((o) => {
    const ids = new Set<string>();
    for (const m of filtered) for (const q of m.prefixes) if (containsPrefix(q, o.prefix) || longest(q) === o.prefix) ids.add(m.id);
    return [o.prefix, o.communities, [...ids].sort()];
  });
}
