import type { Db } from "../../db/connect.js";
import { listSnapshotGroups, type SnapshotGroup } from "../../db/snapshots.js";
import type { RpkiStatus, RpkiValidator } from "../../sources/rpki-source.js";
import { INVALID, NOT_FOUND, VALID, type VrpIndex } from "../../sources/rpki-vrps.js";

export type RpkiPolicy = "off" | "report" | "drop_invalid";

/** A module's RFC 6811 counts over the prefixes of its AS entries (ASNs and AS-SET members). */
export interface RpkiCounts {
  valid: number;
  invalid: number;
  not_found: number;
  dropped: number;
}

export interface RpkiInvalid {
  prefix: string;
  origin: number;
  via?: string;
}

export interface ModuleRpki {
  module_id: string;
  policy: Exclude<RpkiPolicy, "off">;
  counts: RpkiCounts;
  /** The first invalid prefixes (at most `INVALID_LISTED`). */
  invalid: RpkiInvalid[];
  /** What the revision is built from: every prefix of the module, less the dropped ones. */
  prefixes: string[];
}

export interface RpkiCheck {
  status: RpkiStatus | null;
  modules: Map<string, ModuleRpki>;
}

/** Invalid prefixes a warning or a dry run names. */
export const INVALID_LISTED = 20;

/**
 * Validates the `asn` groups (a known origin) of a module's snapshot groups against the index:
 * `report` keeps every prefix, `drop_invalid` leaves RPKI-invalid ones out (never `not_found`).
 * Without an index (validation unavailable) nothing is validated and nothing dropped. All the
 * groups' prefixes are validated in one pass (VrpIndex.validateAll), then read in their order.
 */
export function checkGroups(
  moduleId: string,
  policy: Exclude<RpkiPolicy, "off">,
  groups: readonly SnapshotGroup[],
  index: VrpIndex | null,
  listed = INVALID_LISTED,
): ModuleRpki {
  const counts: RpkiCounts = { valid: 0, invalid: 0, not_found: 0, dropped: 0 };
  const invalid: RpkiInvalid[] = [];
  const prefixes: string[] = [];
  const originOf = (g: SnapshotGroup) => (g.source === "asn" ? Number(g.origin) : Number.NaN);
  const checked = index ? groups.filter((g) => Number.isInteger(originOf(g))) : [];
  const states = index ? index.validateAll(checked.map((g) => ({ prefixes: g.prefixes, origin: originOf(g) }))) : null;
  let slot = 0;
  for (const g of groups) {
    const origin = originOf(g);
    if (!states || !Number.isInteger(origin)) {
      for (const p of g.prefixes) prefixes.push(p);
      continue;
    }
    for (const p of g.prefixes) {
      const state = states[slot++];
      if (state === INVALID) {
        counts.invalid++;
        if (invalid.length < listed) invalid.push({ prefix: p, origin, ...(g.via ? { via: g.via } : {}) });
        if (policy === "drop_invalid") {
          counts.dropped++;
          continue;
        }
      } else if (state === VALID) counts.valid++;
      else if (state === NOT_FOUND) counts.not_found++;
      prefixes.push(p);
    }
  }
  return { module_id: moduleId, policy, counts, invalid, prefixes };
}

/**
 * The refresh's validation: every enabled module whose `rpki_policy` is not `off`, from the
 * groups just collected or, for a module not collected now, from its stored snapshot (a new VRP
 * set can turn its prefixes invalid too). Their prefixes go to the build as collected ones.
 */
export async function checkRpki(
  db: Db,
  validator: RpkiValidator | null,
  modules: readonly { id: string; enabled: boolean; rpki_policy: RpkiPolicy }[],
  collected: ReadonlyMap<string, { groups: SnapshotGroup[] }>,
): Promise<RpkiCheck> {
  const out: RpkiCheck = { status: null, modules: new Map() };
  const checked = modules.filter((m) => m.enabled && m.rpki_policy !== "off");
  if (!checked.length) return out;
  const index = validator ? await validator.index() : null;
  out.status = validator
    ? validator.status()
    : { available: false, reason: "no VRP source is configured (RPKI_VRP_SOURCE)", generated_at: null, loaded_at: null, vrp_count: 0 };
  for (const m of checked) {
    const groups = collected.get(m.id)?.groups ?? (await listSnapshotGroups(db, m.id));
    out.modules.set(m.id, checkGroups(m.id, m.rpki_policy as Exclude<RpkiPolicy, "off">, groups, index));
  }
  return out;
}

/** The job result's part (`rpki` of the module) and warnings of one module's validation. */
export function rpkiReport(
  check: RpkiCheck,
  moduleId: string,
): { part: { rpki?: RpkiCounts & { available: boolean } }; warnings: { module_id: string; source: string; message: string }[] } {
  const m = check.modules.get(moduleId);
  if (!m || !check.status) return { part: {}, warnings: [] };
  const warnings: { module_id: string; source: string; message: string }[] = [];
  if (!check.status.available) {
    warnings.push({ module_id: moduleId, source: "rpki", message: `RPKI validation unavailable, nothing validated or dropped: ${check.status.reason}` });
  } else if (m.counts.invalid > 0) {
    const listed = m.invalid.map((i) => `${i.prefix} from AS${i.origin}${i.via ? ` (${i.via})` : ""}`).join(", ");
    const verb = m.policy === "drop_invalid" ? "dropped" : "kept (rpki_policy report)";
    warnings.push({
      module_id: moduleId,
      source: "rpki",
      message: `${m.counts.invalid} RPKI-invalid prefixes ${verb}: ${listed}${m.counts.invalid > m.invalid.length ? ", …" : ""}`,
    });
  }
  return { part: { rpki: { ...m.counts, available: check.status.available } }, warnings };
}

/** The revision's modules, each validated one with the count of prefixes validation dropped. */
export function withRpkiDropped<T extends { module_id: string }>(modules: T[], check: RpkiCheck): (T & { rpki_dropped?: number })[] {
  if (!check.modules.size) return modules;
  return modules.map((m) => {
    const r = check.modules.get(m.module_id);
    return r ? { ...m, rpki_dropped: r.counts.dropped } : m;
  });
}
