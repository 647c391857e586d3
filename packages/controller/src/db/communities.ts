import type { Db } from "./connect.js";
import { type KeysetPage, tenantTable } from "./tenant-table.js";

export interface CommunityRow {
  id: string;
  tenant_id: string;
  community: string;
  title: string;
  description: string;
  created_at: Date;
  updated_at: Date;
}

export async function insertCommunity(db: Db, row: CommunityRow): Promise<void> {
  await db`
    INSERT INTO communities (id, tenant_id, community, title, description, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.community}, ${row.title}, ${row.description}, ${row.created_at}, ${row.updated_at})`;
}

export type CommunityWrite = Pick<CommunityRow, "community" | "title" | "description" | "updated_at">;

const communities = tenantTable<CommunityRow>("communities", "community");
export const { findById: findCommunityById, findByName: findCommunityByValue, listAll: listAllCommunities, deleteById: deleteCommunity } = communities;

export function updateCommunity(db: Db, tenantId: string, id: string, patch: CommunityWrite): Promise<CommunityRow> {
  const set = db`community = ${patch.community}, title = ${patch.title}, description = ${patch.description}, updated_at = ${patch.updated_at}`;
  return communities.update(db, tenantId, id, set);
}

/** `q`: the value or the title contains it, in any case. */
export function listCommunities(db: Db, tenantId: string, opts: KeysetPage & { q?: string | undefined }): Promise<CommunityRow[]> {
  const q = opts.q === undefined ? db`` : db`AND (strpos(lower(community), lower(${opts.q})) > 0 OR strpos(lower(title), lower(${opts.q})) > 0)`;
  return communities.list(db, tenantId, opts, q);
}

/** A tenant's communities as a bundle carries them: id, value and title, by value. */
export async function listCommunityValues(db: Db, tenantId: string): Promise<{ id: string; community: string; title: string }[]> {
  return db<{ id: string; community: string; title: string }[]>`SELECT id, community, title FROM communities WHERE tenant_id = ${tenantId} ORDER BY community`;
}
