import type { Db } from "./connect.js";

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

export async function findCommunityById(db: Db, tenantId: string, id: string, forUpdate = false): Promise<CommunityRow | undefined> {
  const [row] = forUpdate
    ? await db<CommunityRow[]>`SELECT * FROM communities WHERE tenant_id = ${tenantId} AND id = ${id} FOR UPDATE`
    : await db<CommunityRow[]>`SELECT * FROM communities WHERE tenant_id = ${tenantId} AND id = ${id}`;
  return row;
}

export async function findCommunityByValue(db: Db, tenantId: string, community: string): Promise<CommunityRow | undefined> {
  const [row] = await db<CommunityRow[]>`SELECT * FROM communities WHERE tenant_id = ${tenantId} AND community = ${community}`;
  return row;
}

export async function listCommunities(
  db: Db,
  tenantId: string,
  opts: { afterId: string | null; limit: number; q?: string | undefined },
): Promise<CommunityRow[]> {
  return db<CommunityRow[]>`
    SELECT * FROM communities
    WHERE tenant_id = ${tenantId}
      ${opts.afterId === null ? db`` : db`AND id < ${opts.afterId}`}
      ${opts.q === undefined ? db`` : db`AND (strpos(lower(community), lower(${opts.q})) > 0 OR strpos(lower(title), lower(${opts.q})) > 0)`}
    ORDER BY id DESC LIMIT ${opts.limit + 1}`;
}

export async function listAllCommunities(db: Db, tenantId: string): Promise<CommunityRow[]> {
  return db<CommunityRow[]>`SELECT * FROM communities WHERE tenant_id = ${tenantId} ORDER BY id`;
}

export async function updateCommunity(
  db: Db,
  tenantId: string,
  id: string,
  patch: { community: string; title: string; description: string; updated_at: Date },
): Promise<CommunityRow> {
  const [row] = await db<CommunityRow[]>`
    UPDATE communities SET community = ${patch.community}, title = ${patch.title}, description = ${patch.description}, updated_at = ${patch.updated_at}
    WHERE tenant_id = ${tenantId} AND id = ${id} RETURNING *`;
  return row!;
}

export async function deleteCommunity(db: Db, tenantId: string, id: string): Promise<void> {
  await db`DELETE FROM communities WHERE tenant_id = ${tenantId} AND id = ${id}`;
}

/** A tenant's communities as a bundle carries them: id, value and title, by value. */
export async function listCommunityValues(db: Db, tenantId: string): Promise<{ id: string; community: string; title: string }[]> {
  return db<{ id: string; community: string; title: string }[]>`SELECT id, community, title FROM communities WHERE tenant_id = ${tenantId} ORDER BY community`;
}
