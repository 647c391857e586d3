import { type Address, containsAddress, DEFAULT_EXCLUDE_PREFIXES, DEFAULT_MIN_PREFIX_LENGTH_V4, DEFAULT_MIN_PREFIX_LENGTH_V6 } from "@rlc/shared/prefix";
import type { LookupExclusion } from "@rlc/shared/schemas";

/** A snapshot prefix that contains the address, with what the answer needs of its module. */
export interface CollectedMatch {
  module_id: string;
  module_name: string;
  enabled: boolean;
  action: "announce" | "exclude";
  prefix: string;
}

export interface LookupAnswer {
  announced: boolean;
  announced_prefix: string | null;
  communities: string[];
  excluded_by: LookupExclusion[];
  answer: string;
}

export interface BogonRules {
  exclude_prefixes?: readonly string[];
  min_prefix_length_v4?: number;
  min_prefix_length_v6?: number;
}

const unique = <T>(items: T[]) => [...new Set(items)];

/**
 * Whether the current revision announces the address, and why: the longest announced prefix
 * and its communities, or what cut it out: exclude modules, the tenant's
 * `BIRD.exclude_prefixes` (or their defaults), prefixes shorter than the minimum length. The
 * tenant's settings are read only when the address was collected and is not announced.
 */
export function answerLookup(
  address: Address,
  revision: { prefix: string; communities: string[] } | null,
  collected: readonly CollectedMatch[],
  bogonRules: () => BogonRules,
): LookupAnswer {
  // Nothing collected and nothing announced (most addresses looked up): the answer is known
  // without the filtering and sorting below.
  if (!revision && collected.length === 0) {
    return { announced: false, announced_prefix: null, communities: [], excluded_by: [], answer: "not announced: in no enabled list" };
  }
  const announcing = collected.filter((c) => c.enabled && c.action === "announce");
  const names = unique(announcing.map((c) => c.module_name)).sort();
  if (revision) {
    const communities = revision.communities.length ? ` with ${revision.communities.join(", ")}` : "";
    const from = names.length ? ` — from module${names.length > 1 ? "s" : ""} ${names.join(", ")}` : "";
    return {
      announced: true,
      announced_prefix: revision.prefix,
      communities: revision.communities,
      excluded_by: [],
      answer: `announced as ${revision.prefix}${communities}${from}`,
    };
  }
  if (announcing.length === 0) {
    return { announced: false, announced_prefix: null, communities: [], excluded_by: [], answer: "not announced: in no enabled list" };
  }
  const rules = bogonRules();
  const excludedBy: LookupExclusion[] = [];
  for (const c of collected) {
    if (c.enabled && c.action === "exclude") excludedBy.push({ kind: "module", module_id: c.module_id, module_name: c.module_name, prefix: c.prefix });
  }
  for (const prefix of rules.exclude_prefixes ?? DEFAULT_EXCLUDE_PREFIXES) {
    if (containsAddress(prefix, address)) excludedBy.push({ kind: "tenant_exclusion", prefix });
  }
  const min =
    address.family === 4 ? (rules.min_prefix_length_v4 ?? DEFAULT_MIN_PREFIX_LENGTH_V4) : (rules.min_prefix_length_v6 ?? DEFAULT_MIN_PREFIX_LENGTH_V6);
  for (const prefix of unique(announcing.map((c) => c.prefix))) {
    if (Number(prefix.slice(prefix.indexOf("/") + 1)) < min) excludedBy.push({ kind: "min_prefix_length", prefix });
  }
  const why = excludedBy.map((e) =>
    e.kind === "module"
      ? `module ${e.module_name}`
      : e.kind === "tenant_exclusion"
        ? `BIRD.exclude_prefixes ${e.prefix}`
        : `${e.prefix} shorter than the minimum length`,
  );
  return {
    announced: false,
    announced_prefix: null,
    communities: [],
    excluded_by: excludedBy,
    // Collected, not cut, yet not announced: the revision is older than the snapshot.
    answer: why.length ? `not announced: excluded by ${unique(why).join(", ")}` : `not announced yet: in ${names.join(", ")}, not in the current revision`,
  };
}
