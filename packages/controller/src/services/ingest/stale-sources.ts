import type { CollectedModule } from "./collect.js";

/** The tenant's `source_max_stale_hours` when it does not say: a week. */
export const DEFAULT_SOURCE_MAX_STALE_HOURS = 168;

/**
 * Hours a module's kept records may outlive their source's last success; null: forever.
 * The module's stored `max_stale_hours`: NULL follows the tenant's `source_max_stale_hours`
 * (hours, 0 for forever, 168 when unset), 0 is forever, any other number is itself.
 */
export function staleBudgetHours(moduleHours: number | null, tenantSetting: unknown): number | null {
  if (moduleHours !== null) return moduleHours === 0 ? null : moduleHours;
  const hours = typeof tenantSetting === "number" ? tenantSetting : DEFAULT_SOURCE_MAX_STALE_HOURS;
  return hours === 0 ? null : hours;
}

/**
 * Drops the groups a failed source kept whose last success is older than the budget, each with a
 * warning `stale:<source>:<origin>`, and counts them in `sources_stale`. A group collected just
 * now has no `refreshed_at` yet; a kept row written before the time was stored counts from the
 * module's previous collection (`collectedAt`), which is written with it from now on.
 */
export function dropStaleGroups(c: CollectedModule, budgetHours: number | null, collectedAt: Date | null, now: Date): void {
  const oldest = budgetHours === null ? null : now.getTime() - budgetHours * 3_600_000;
  const kept: CollectedModule["groups"] = [];
  for (const g of c.groups) {
    if (g.refreshed_at === undefined) {
      kept.push(g);
      continue;
    }
    const at = g.refreshed_at ?? collectedAt?.getTime() ?? now.getTime();
    if (oldest !== null && at < oldest) {
      c.sources_stale++;
      c.warnings.push({
        module_id: c.module_id,
        source: `stale:${g.source}:${g.origin}`,
        message: `last good records from ${new Date(at).toISOString()}, older than max_stale_hours (${budgetHours}): dropped ${g.prefixes.length} prefixes`,
      });
      continue;
    }
    kept.push({ ...g, refreshed_at: at });
  }
  c.groups = kept;
}
