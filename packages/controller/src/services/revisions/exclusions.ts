import { DEFAULT_EXCLUDE_PREFIXES, excludeRanges } from "@rlc/shared/prefix";
import type { BogonSettings } from "./revision-input.js";

/** A module as the revision build gets it; `exclude` modules cut their addresses out of the rest. */
export interface ExclusionInput {
  module_id: string;
  /** `announce` when left out. */
  action?: "announce" | "exclude" | undefined;
  prefixes: readonly string[];
}

export interface Exclusions<M extends ExclusionInput> {
  /** The modules that announce, as given. */
  announce: M[];
  /** The bogon settings with every exclude module's prefixes added to `exclude_prefixes`. */
  bird: BogonSettings;
  /**
   * Per module id: for an announcing module, how many of its distinct collected prefixes the
   * exclude modules cut or dropped; for an exclude module, how many of the announcing modules'
   * distinct collected prefixes it cut or dropped.
   */
  excluded: Map<string, number>;
}

/**
 * "Never steer": the prefixes of exclude modules are cut out of every prefix the tenant
 * announces, the rest kept as the fewest CIDRs around the hole. They join the tenant's
 * `BIRD.exclude_prefixes` as holes of the bogon filter, which cuts every module's collected
 * prefixes before the aggregation, so what remains obeys the union rule of a revision (for
 * every address left, the communities of every module that contains it) exactly as if the cut
 * were made on the aggregated result, and is counted in `dropped_prefix_count` with the bogons.
 * An exclude module's community is not used.
 */
export function splitExclusions<M extends ExclusionInput>(modules: readonly M[], bird: BogonSettings): Exclusions<M> {
  const announce = modules.filter((m) => m.action !== "exclude");
  const excluders = modules.filter((m) => m.action === "exclude");
  const excluded = new Map<string, number>(modules.map((m) => [m.module_id, 0]));
  const holes = excluders.flatMap((m) => m.prefixes);
  if (holes.length === 0) return { announce, bird, excluded };
  for (const m of announce) {
    const cut = excludeRanges(m.prefixes, holes);
    excluded.set(m.module_id, cut.dropped + cut.cut);
  }
  if (excluders.length > 0) {
    const announced = announce.flatMap((m) => m.prefixes);
    for (const m of excluders) {
      const cut = excludeRanges(announced, m.prefixes);
      excluded.set(m.module_id, cut.dropped + cut.cut);
    }
  }
  return { announce, bird: { ...bird, exclude_prefixes: [...(bird.exclude_prefixes ?? DEFAULT_EXCLUDE_PREFIXES), ...holes] }, excluded };
}
