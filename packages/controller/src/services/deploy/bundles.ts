import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { type BundleConfig, type BundlePeer, configBytes, contentDigestV2, DEFAULT_BUNDLE_LIFETIME_MS, signBundleHead } from "@rlc/shared/bundle";
import { NotFoundError } from "@rlc/shared/errors";
import { upsertBundle } from "../../db/bundles.js";
import { listCommunityValues } from "../../db/communities.js";
import type { Db } from "../../db/connect.js";
import { listPeersOfSpeaker } from "../../db/peers.js";
import type { SpeakerRow } from "../../db/speakers.js";
import { ENVELOPE_CHUNK_BYTES, sealEnvelope } from "../../lib/sealed-envelope.js";
import { MASKED_SECRET, type SecretBox } from "../../lib/secret-box.js";
import { readTenantSettings } from "../operations/settings.js";
import type { RevisionStore } from "../revisions/revision-store.js";
import { ensureDeltaSection, ensureFullSection, openFullSection } from "./bundle-sections.js";
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

/** How a peer's stored password appears in the peers of a bundle or a preview. */
export type PasswordView = (stored: { password: string; password_sealed: boolean }) => string;

export const openPassword =
  (box: SecretBox): PasswordView =>
  (p) =>
    p.password_sealed ? box.openText(p.password) : p.password;

/** What a rendering that is not the speaker's own bundle (a preview) shows for a password. */
export const maskPassword: PasswordView = () => MASKED_SECRET;

const gzipAsync = promisify(gzip);

/**
 * A stored bundle (up to 128 MiB) compressed on libuv's thread pool: gzipSync on the event loop
 * held every other request (health checks included) for the whole compression.
 */
export function gzipBundle(bytes: Buffer): Promise<Buffer> {
  return gzipAsync(bytes, { level: 1 });
}

/** A speaker's enabled peers as a bundle carries them: export communities as values, the password as `password` shows it. */
export async function bundlePeersOf(
  db: Db,
  speakerId: string,
  communities: { id: string; community: string }[],
  password: PasswordView,
): Promise<BundlePeer[]> {
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
 * Signs and stores the bundle of `revisionId` for one speaker (`rl-bundle/2`): the revision's
 * prefixes with their communities, the speaker's enabled peers with their export communities
 * as values, the tenant's BIRD settings. The prefix section is the revision's, stored once for
 * every speaker; what is signed and stored per speaker is the head (header, signature, config),
 * and a second head for the delta from the revision the speaker runs, when that is smaller.
 * Stored sealed; agents receive the signed bytes opened, unchanged.
 */
export async function issueBundle(
  db: Db,
  deps: BundleDeps,
  speaker: SpeakerRow,
  revisionId: number,
  sequence: number,
  now: Date,
  options: { forceConfirm?: boolean; withEnvelope?: boolean } = {},
) {
  const full = await ensureFullSection(db, deps, speaker.tenant_id, revisionId);
  if (!full) throw new NotFoundError("revision", revisionId);
  const settings = await readTenantSettings(db, speaker.tenant_id);
  const communities = await listCommunityValues(db, speaker.tenant_id);
  const peers = await bundlePeersOf(db, speaker.id, communities, openPassword(deps.secretBox));
  const config: BundleConfig = {
    tenant_id: speaker.tenant_id,
    speaker_id: speaker.id,
    revision_id: revisionId,
    speaker: { router_id: speaker.router_id, asn: Number(speaker.asn), policies_json: speaker.policies_json },
    bird: (settings.BIRD ?? {}) as Record<string, unknown>,
    communities,
    peers,
    // Only when asked: every other bundle keeps the digest it had before the field existed.
    ...(options.forceConfirm ? { force_confirm: true as const } : {}),
  };
  const base = speaker.applied_revision_id;
  const delta = base !== null && base !== revisionId ? await ensureDeltaSection(db, deps, speaker.tenant_id, base, full) : null;
  const expiresAt = new Date(now.getTime() + DEFAULT_BUNDLE_LIFETIME_MS);
  const digest = contentDigestV2(config, full.prefixes_sha256);
  const common = {
    tenant_id: speaker.tenant_id,
    speaker_id: speaker.id,
    revision_id: revisionId,
    sequence,
    issued_at: now.toISOString(),
    expires_at: expiresAt.toISOString(),
    digest,
    prefixes_sha256: full.prefixes_sha256,
  };
  const key = await deps.signing.activeKey(db, speaker.tenant_id);
  const cfg = configBytes(config);
  const head = await signBundleHead({ ...common, section: "full", section_sha256: full.sha256, section_size: full.size }, cfg, key);
  const deltaHead = delta
    ? await signBundleHead(
        {
          ...common,
          section: "delta",
          section_sha256: delta.sha256,
          section_size: delta.size,
          base_revision_id: delta.base_revision_id,
          base_prefixes_sha256: delta.base_prefixes_sha256!,
        },
        cfg,
        key,
      )
    : null;
  const chunk = deps.sealChunkBytes ?? ENVELOPE_CHUNK_BYTES;
  await upsertBundle(db, {
    tenant_id: speaker.tenant_id,
    speaker_id: speaker.id,
    revision_id: revisionId,
    sequence,
    digest,
    issued_at: now,
    expires_at: expiresAt,
    // Sealed whether or not a peer has a password: AES-GCM runs at several hundred MB/s,
    // cheaper than keeping two storage forms apart.
    envelope: await sealEnvelope(deps.secretBox, head, chunk),
    envelope_sealed: true,
    envelope_chunk: chunk,
    envelope_size: head.length,
    envelope_sha256: createHash("sha256").update(head).digest("hex"),
    format: 2,
    delta_base_revision_id: delta ? delta.base_revision_id : null,
    delta_head: deltaHead ? await sealEnvelope(deps.secretBox, deltaHead, chunk) : null,
  });
  // The whole signed bundle, for a caller that uses it at once (the local speaker).
  const envelope = options.withEnvelope ? Buffer.concat([head, await openFullSection(db, deps, speaker.tenant_id, full)]) : null;
  return { sequence, digest, issued_at: common.issued_at, envelope, delta: delta !== null };
}
