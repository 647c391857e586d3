import type { Db } from "./connect.js";
import { type KeysetPage, keysetPage } from "./tenant-table.js";

export interface PeerRow {
  id: string;
  tenant_id: string;
  name: string;
  neighbor_address: string;
  neighbor_port: number;
  remote_asn: string;
  local_asn: string | null;
  description: string;
  enabled: boolean;
  /** Sealed with the data key when password_sealed; plain only in a row the start has not carried over yet. */
  password: string | null;
  password_sealed: boolean;
  multihop: boolean | number;
  address_families: string[];
  export_community_ids: string[];
  speaker_ids: string[];
  created_at: Date;
  updated_at: Date;
}

const SELECT_PEER = (db: Db) => db`
  SELECT p.*, COALESCE((SELECT array_agg(ps.speaker_id ORDER BY ps.speaker_id) FROM peer_speakers ps WHERE ps.peer_id = p.id), '{}') AS speaker_ids
  FROM peers p`;

/** `password` is the sealed text (or null): the database never gets it in plain text. */
export type PeerWrite = Omit<PeerRow, "tenant_id" | "created_at" | "updated_at" | "remote_asn" | "local_asn" | "password_sealed"> & {
  remote_asn: number;
  local_asn: number | null;
};

export async function insertPeer(db: Db, tenantId: string, p: PeerWrite, at: Date): Promise<void> {
  await db`
    INSERT INTO peers (id, tenant_id, name, neighbor_address, neighbor_port, remote_asn, local_asn, description, enabled, password,
                       password_sealed, multihop, address_families, export_community_ids, created_at, updated_at)
    VALUES (${p.id}, ${tenantId}, ${p.name}, ${p.neighbor_address}, ${p.neighbor_port}, ${p.remote_asn}, ${p.local_asn}, ${p.description},
            ${p.enabled}, ${p.password}, true, ${db.json(p.multihop as never)}, ${p.address_families}::text[], ${p.export_community_ids}::uuid[], ${at}, ${at})`;
  await setPeerSpeakers(db, tenantId, p.id, p.speaker_ids);
}

export async function updatePeer(db: Db, tenantId: string, p: PeerWrite, at: Date): Promise<void> {
  await db`
    UPDATE peers SET name = ${p.name}, neighbor_address = ${p.neighbor_address}, neighbor_port = ${p.neighbor_port}, remote_asn = ${p.remote_asn},
      local_asn = ${p.local_asn}, description = ${p.description}, enabled = ${p.enabled}, password = ${p.password}, password_sealed = true,
      multihop = ${db.json(p.multihop as never)}, address_families = ${p.address_families}::text[],
      export_community_ids = ${p.export_community_ids}::uuid[], updated_at = ${at}
    WHERE tenant_id = ${tenantId} AND id = ${p.id}`;
  await setPeerSpeakers(db, tenantId, p.id, p.speaker_ids);
}

async function setPeerSpeakers(db: Db, tenantId: string, peerId: string, speakerIds: string[]): Promise<void> {
  await db`DELETE FROM peer_speakers WHERE peer_id = ${peerId}`;
  if (speakerIds.length) {
    await db`INSERT INTO peer_speakers (tenant_id, peer_id, speaker_id) SELECT ${tenantId}, ${peerId}, s FROM unnest(${speakerIds}::uuid[]) AS s`;
  }
}

export async function findPeerById(db: Db, tenantId: string, id: string): Promise<PeerRow | undefined> {
  const [r] = await db<PeerRow[]>`${SELECT_PEER(db)} WHERE p.tenant_id = ${tenantId} AND p.id = ${id}`;
  return r;
}

export async function findPeerByName(db: Db, tenantId: string, name: string): Promise<PeerRow | undefined> {
  const [r] = await db<PeerRow[]>`${SELECT_PEER(db)} WHERE p.tenant_id = ${tenantId} AND p.name = ${name}`;
  return r;
}

export async function listPeers(db: Db, tenantId: string, page: KeysetPage): Promise<PeerRow[]> {
  return db<PeerRow[]>`${SELECT_PEER(db)} WHERE p.tenant_id = ${tenantId} ${keysetPage(db, page, db`p.id`)}`;
}

export async function listPeersOfSpeaker(db: Db, speakerId: string): Promise<PeerRow[]> {
  return db<PeerRow[]>`
    ${SELECT_PEER(db)} WHERE p.enabled AND p.id IN (SELECT peer_id FROM peer_speakers WHERE speaker_id = ${speakerId}) ORDER BY p.id`;
}

/** The enabled peers of each of `speakerIds`, in one query: a row per peer and speaker, `speaker_id` naming which. */
export async function listPeersOfSpeakers(db: Db, speakerIds: string[]): Promise<(PeerRow & { speaker_id: string })[]> {
  if (!speakerIds.length) return [];
  return db<(PeerRow & { speaker_id: string })[]>`
    SELECT p.*, ps.speaker_id, COALESCE((SELECT array_agg(x.speaker_id ORDER BY x.speaker_id) FROM peer_speakers x WHERE x.peer_id = p.id), '{}') AS speaker_ids
    FROM peers p JOIN peer_speakers ps ON ps.peer_id = p.id
    WHERE p.enabled AND ps.speaker_id = ANY(${speakerIds}::uuid[]) ORDER BY ps.speaker_id, p.id`;
}

export async function listPeerNamesOfSpeaker(db: Db, speakerId: string): Promise<string[]> {
  const rows = await db<{ name: string }[]>`
    SELECT p.name FROM peers p JOIN peer_speakers ps ON ps.peer_id = p.id WHERE ps.speaker_id = ${speakerId} ORDER BY p.name`;
  return rows.map((r) => r.name);
}

export async function deletePeer(db: Db, tenantId: string, id: string): Promise<void> {
  await db`DELETE FROM peers WHERE tenant_id = ${tenantId} AND id = ${id}`;
}

export async function countExistingSpeakers(db: Db, tenantId: string, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const [r] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM speakers WHERE tenant_id = ${tenantId} AND id = ANY(${ids}::uuid[])`;
  return r?.n ?? 0;
}

export async function countExistingCommunities(db: Db, tenantId: string, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const [r] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM communities WHERE tenant_id = ${tenantId} AND id = ANY(${ids}::uuid[])`;
  return r?.n ?? 0;
}

/** Passwords of rows written before passwords were sealed. */
export async function listPlainPeerPasswords(db: Db): Promise<{ id: string; password: string }[]> {
  return db<{ id: string; password: string }[]>`SELECT id, password FROM peers WHERE NOT password_sealed AND password IS NOT NULL FOR UPDATE`;
}

export async function setPeerPasswordSealed(db: Db, id: string, sealed: string): Promise<void> {
  await db`UPDATE peers SET password = ${sealed}, password_sealed = true WHERE id = ${id}`;
}
