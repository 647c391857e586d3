import type { Db } from "./connect.js";

/**
 * The tenant's snapshot generation (bumped by every refresh that writes a snapshot): a build
 * kept from the same generation was made from the snapshots as they are.
 */
export async function findSnapshotGeneration(db: Db, tenantId: string): Promise<string> {
  const [row] = await db<{ g: string }[]>`
    SELECT coalesce((SELECT snapshot_generation FROM tenant_generations WHERE tenant_id = ${tenantId}), 0)::text AS g`;
  return row!.g;
}
