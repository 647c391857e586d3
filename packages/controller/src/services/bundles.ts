import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { NotFoundError } from "@rlc/shared/errors";
import { type BundlePeer, buildBundlePayload, signBundle } from "@rlc/shared/bundle";
import type { Db } from "../db/connect.js";
import { upsertBundle } from "../db/bundles.js";
import { listPeersOfSpeaker } from "../db/peers.js";
import type { SpeakerRow } from "../db/speakers.js";
import type { SecretBox } from "../lib/secret-box.js";
import { ENVELOPE_CHUNK_BYTES, sealEnvelope } from "../lib/sealed-envelope.js";
import type { RevisionStore } from "./revision-store.js";
import { readTenantSettings } from "./settings.js";
import type { SigningService } from "./signing.js";

export interface BundleDeps {
  signing: SigningService;
  revisions: RevisionStore;
  /**
   * Opens the peers' sealed passwords for the signed bundle, and seals the stored bundle again:
   * the plain passwords exist only in what an agent is sent.
   */
  secretBox: SecretBox;
  /** Plain bytes per sealed piece of the stored envelope (tests make it small to cross pieces). */
  sealChunkBytes?: number;
}

/** What a rendering that is not the speaker's own bundle (a preview) shows for a password. */
export const MASKED_SECRET = "********";

/** How a peer's stored password appears in the peers of a bundle or a preview. */
export type PasswordView = (stored: { password: string; password_sealed: boolean }) => string;

export const openPassword =
  (box: SecretBox): PasswordView =>
  (p) =>
    p.password_sealed ? box.openText(p.password) : p.password;
export const maskPassword: PasswordView = () => MASKED_SECRET;

const gzipAsync = promisify(gzip);

/**
 * A stored bundle (up to 128 MiB) compressed on libuv's thread pool: gzipSync on the event loop
 * held every other request (health checks included) for the whole compression.
 */
export function gzipBundle(bytes: Buffer): Promise<Buffer> {
  return gzipAsync(bytes, { level: 1 });
}

async function listCommunities(db: Db, tenantId: string) {
  return db<{ id: string; community: string; title: string }[]>`SELECT id, community, title FROM communities WHERE tenant_id = ${tenantId} ORDER BY community`;
}

/** A speaker's enabled peers as a bundle carries them: export communities as values, the password as `password` shows it. */
export async function bundlePeersOf(db: Db, speakerId: string, communities: { id: string; community: string }[], password: PasswordView): Promise<BundlePeer[]> {
  const communityValue = new Map(communities.map((c) => [c.id, c.community]));
  return (await listPeersOfSpeaker(db, speakerId)).map((p) => ({
    id: p.id,
    name: p.name,
    neighbor_address: p.neighbor_address,
    neighbor_port: p.neighbor_port,
    remote_asn: Number(p.remote_asn),
    local_asn: p.local_asn === null ? null : Number(p.local_asn),
    ...(p.password ? { password: password({ password: p.password, password_sealed: p.password_sealed }) } : {}),
    multihop: p.multihop,
    address_families: p.address_families as ("ipv4" | "ipv6")[],
    export_communities: p.export_community_ids.map((id) => communityValue.get(id)).filter((v): v is string => v !== undefined),
  }));
}

/**
 * Signs and stores the bundle of `revisionId` for one speaker: the revision's
 * prefixes with their communities, the speaker's enabled peers with their export communities
 * as values, the tenant's BIRD settings. Stored sealed; agents receive the signed bytes opened, unchanged.
 */
export async function issueBundle(
  db: Db,
  deps: BundleDeps,
  speaker: SpeakerRow,
  revisionId: number,
  sequence: number,
  now: Date,
  options: { forceConfirm?: boolean } = {},
) {
  const content = await deps.revisions.content(db, speaker.tenant_id, revisionId);
  if (!content) throw new NotFoundError("revision", revisionId);
  const settings = await readTenantSettings(db, speaker.tenant_id);
  const communities = await listCommunities(db, speaker.tenant_id);
  const peers = await bundlePeersOf(db, speaker.id, communities, openPassword(deps.secretBox));
  const payload = buildBundlePayload(
    {
      tenant_id: speaker.tenant_id,
      speaker_id: speaker.id,
      revision_id: revisionId,
      speaker: { router_id: speaker.router_id, asn: Number(speaker.asn), policies_json: speaker.policies_json },
      bird: (settings.BIRD ?? {}) as Record<string, unknown>,
      communities,
      peers,
      prefixes: {
        v4: content.v4.map(([p, c]) => [p, c] as [string, string[]]),
        v6: content.v6.map(([p, c]) => [p, c] as [string, string[]]),
      },
      // Only when asked: every other bundle keeps the digest it had before the field existed.
      ...(options.forceConfirm ? { force_confirm: true as const } : {}),
    },
    { sequence, issuedAt: now },
  );
  const key = await deps.signing.activeKey(db, speaker.tenant_id);
  const signed = await signBundle(payload, key.secretKey, key.keyId);
  const envelope = Buffer.from(JSON.stringify(signed));
  const chunk = deps.sealChunkBytes ?? ENVELOPE_CHUNK_BYTES;
  await upsertBundle(db, {
    tenant_id: speaker.tenant_id,
    speaker_id: speaker.id,
    revision_id: revisionId,
    sequence,
    digest: payload.digest,
    issued_at: now,
    expires_at: new Date(payload.expires_at),
    // Sealed whether or not a peer has a password: AES-GCM runs at several hundred MB/s
    // (about 25 ms for 21 MiB), cheaper than keeping two storage forms apart.
    envelope: await sealEnvelope(deps.secretBox, envelope, chunk),
    envelope_sealed: true,
    envelope_chunk: chunk,
    envelope_size: envelope.length,
    envelope_sha256: createHash("sha256").update(envelope).digest("hex"),
  });
  // The signed bytes as issued, for a caller that uses them at once (the local speaker).
  return { sequence, digest: payload.digest, issued_at: payload.issued_at, envelope };
}
