import type { Db } from "./connect.js";

export interface SnapshotRecord {
  prefix: string;
  source: "asn" | "domain" | "ip_range" | "cdn";
  origin: string;
  last_seen_at: Date;
}

const BATCH = 50_000;

/** Replaces a module's snapshot. Batched INSERT … unnest (COPY does not run on PGlite's socket). */
export async function replaceModuleSnapshot(db: Db, tenantId: string, moduleId: string, records: readonly SnapshotRecord[]): Promise<void> {
  await db`DELETE FROM snapshot_records WHERE module_id = ${moduleId}`;
  for (let i = 0; i < records.length; i += BATCH) {
    const part = records.slice(i, i + BATCH);
    await db`
      INSERT INTO snapshot_records (tenant_id, module_id, prefix, source, origin, last_seen_at)
      SELECT ${tenantId}::uuid, ${moduleId}::uuid, p, s, o, t
      FROM unnest(${part.map((r) => r.prefix)}::text[], ${part.map((r) => r.source)}::text[],
                  ${part.map((r) => r.origin)}::text[], ${part.map((r) => r.last_seen_at.toISOString())}::timestamptz[]) AS x(p, s, o, t)`;
  }
}

export async function listModuleSnapshot(db: Db, moduleId: string): Promise<SnapshotRecord[]> {
  return db<SnapshotRecord[]>`SELECT prefix, source, origin, last_seen_at FROM snapshot_records WHERE module_id = ${moduleId}`;
}

/** The distinct prefixes of each given module's snapshot. */
export async function listSnapshotPrefixes(db: Db, moduleIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(moduleIds.map((id) => [id, []]));
  if (!moduleIds.length) return out;
  const rows = await db<{ module_id: string; prefix: string }[]>`
    SELECT DISTINCT module_id, prefix FROM snapshot_records WHERE module_id = ANY(${moduleIds}::uuid[])`;
  for (const r of rows) out.get(r.module_id)!.push(r.prefix);
  return out;
}

export async function listTenantSnapshot(db: Db, tenantId: string): Promise<{ module_id: string; prefix: string; source: string; origin: string }[]> {
  return db<{ module_id: string; prefix: string; source: string; origin: string }[]>`
    SELECT module_id, prefix, source, origin FROM snapshot_records WHERE tenant_id = ${tenantId}`;
}

export async function listDomainAddresses(db: Db, moduleIds: string[], domains: string[]): Promise<{ module_id: string; origin: string; prefix: string }[]> {
  if (!moduleIds.length || !domains.length) return [];
  return db<{ module_id: string; origin: string; prefix: string }[]>`
    SELECT module_id, origin, prefix FROM snapshot_records
    WHERE module_id = ANY(${moduleIds}::uuid[]) AND source = 'domain' AND origin = ANY(${domains}::text[])
    ORDER BY module_id, origin, prefix`;
}

export async function bumpSnapshotGeneration(db: Db, tenantId: string): Promise<void> {
  await db`
    INSERT INTO tenant_generations (tenant_id, snapshot_generation) VALUES (${tenantId}, 1)
    ON CONFLICT (tenant_id) DO UPDATE SET snapshot_generation = tenant_generations.snapshot_generation + 1`;
}

export async function findSnapshotGeneration(db: Db, tenantId: string): Promise<number> {
  const [row] = await db<{ g: string }[]>`SELECT snapshot_generation::text AS g FROM tenant_generations WHERE tenant_id = ${tenantId}`;
  return row ? Number(row.g) : 0;
}
