import { createHash } from "node:crypto";
import {
  type BundleConfig,
  type BundlePeer,
  configBytes,
  contentDigestV2,
  DEFAULT_BUNDLE_LIFETIME_MS,
  type SigningKeyPair,
  signBundleHead,
} from "@rlc/shared/bundle";
import { NotFoundError } from "@rlc/shared/errors";
import type { BundleSectionMeta } from "../../db/bundle-sections.js";
import { type BundleWrite, upsertBundle, upsertBundles } from "../../db/bundles.js";
import { listCommunityValues } from "../../db/communities.js";
import type { Db } from "../../db/connect.js";
import { listPeersOfSpeaker, listPeersOfSpeakers, type PeerRow } from "../../db/peers.js";
import type { SpeakerRow } from "../../db/speakers.js";
import { ENVELOPE_CHUNK_BYTES, sealEnvelope } from "../../lib/sealed-envelope.js";
import { MASKED_SECRET, type SecretBox } from "../../lib/secret-box.js";
import { readTenantSettings } from "../operations/settings.js";
import { ensureDeltaSection, ensureFullSection, openSection, type SectionDeps } from "./bundle-sections.js";
import type { SigningService } from "./signing.js";

/**
 * The sections' (bundle-sections.ts) and the signing service. The secret box also opens the
 * peers' sealed passwords for the signed bundle, and seals the stored bundle again: the plain
 * passwords exist only in what an agent is sent.
 */
export interface BundleDeps extends SectionDeps {
  signing: SigningService;
}

/** How a peer's stored password appears in the peers of a bundle or a preview. */
export type PasswordView = (stored: { password: string; password_sealed: boolean }) => string;

export const openPassword =
  (box: SecretBox): PasswordView =>
  (p) =>
    p.password_sealed ? box.openText(p.password) : p.password;

/** What a rendering that is not the speaker's own bundle (a preview) shows for a password. */
export const maskPassword: PasswordView = () => MASKED_SECRET;

/** A peer row as a bundle carries it: export communities as values, the password as `password` shows it. */
function bundlePeerOf(p: PeerRow, communityValue: Map<string, string>, password: PasswordView): BundlePeer {
  return {
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
  };
}

/** A speaker's enabled peers as a bundle carries them. */
export async function bundlePeersOf(
  db: Db,
  speakerId: string,
  communities: { id: string; community: string }[],
  password: PasswordView,
): Promise<BundlePeer[]> {
  const communityValue = new Map(communities.map((c) => [c.id, c.community]));
  return (await listPeersOfSpeaker(db, speakerId)).map((p) => bundlePeerOf(p, communityValue, password));
}

/**
 * A speaker's peers as its bundle would carry them, for a reader (a revision's preview): a
 * peer's password shows as the mask, never opened.
 */
export async function previewPeersOf(db: Db, tenantId: string, speakerId: string): Promise<BundlePeer[]> {
  return bundlePeersOf(db, speakerId, await listCommunityValues(db, tenantId), maskPassword);
}

/**
 * What every speaker's bundle of one revision shares: the prefix section, the tenant's BIRD
 * settings and communities, the signing key, and the delta sections by base revision (each
 * built once). Read once per apply, not once per speaker.
 */
export interface IssueContext {
  tenantId: string;
  revisionId: number;
  full: BundleSectionMeta;
  bird: Record<string, unknown>;
  communities: { id: string; community: string; title: string }[];
  key: SigningKeyPair;
  deltas: Map<number, Promise<BundleSectionMeta | null>>;
}

export async function issueContext(db: Db, deps: BundleDeps, tenantId: string, revisionId: number): Promise<IssueContext> {
  const full = await ensureFullSection(db, deps, tenantId, revisionId);
  if (!full) throw new NotFoundError("revision", revisionId);
  const settings = await readTenantSettings(db, tenantId);
  const communities = await listCommunityValues(db, tenantId);
  const key = await deps.signing.activeKey(db, tenantId);
  return { tenantId, revisionId, full, bird: (settings.BIRD ?? {}) as Record<string, unknown>, communities, key, deltas: new Map() };
}

type IssueOptions = { forceConfirm?: boolean };

/** Signs and seals one speaker's heads (full, and delta from the revision it runs when that is smaller); stores nothing. */
async function signedBundle(
  db: Db,
  deps: BundleDeps,
  ctx: IssueContext,
  speaker: SpeakerRow,
  peers: BundlePeer[],
  sequence: number,
  now: Date,
  options: IssueOptions,
) {
  const { full, key, revisionId } = ctx;
  const config: BundleConfig = {
    tenant_id: speaker.tenant_id,
    speaker_id: speaker.id,
    revision_id: revisionId,
    speaker: { router_id: speaker.router_id, asn: Number(speaker.asn), policies_json: speaker.policies_json },
    bird: ctx.bird,
    communities: ctx.communities,
    peers,
    // Only when asked: every other bundle keeps the digest it had before the field existed.
    ...(options.forceConfirm ? { force_confirm: true as const } : {}),
  };
  const base = speaker.applied_revision_id;
  let delta: BundleSectionMeta | null = null;
  if (base !== null && base !== revisionId) {
    let pending = ctx.deltas.get(base);
    if (!pending) ctx.deltas.set(base, (pending = ensureDeltaSection(db, deps, speaker.tenant_id, base, full)));
    delta = await pending;
  }
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
    // Left out for a section stored before migration 0026 (no root): agents check prefixes_sha256 alone.
    ...(full.prefixes_pages_sha256 ? { prefixes_pages_sha256: full.prefixes_pages_sha256 } : {}),
  };
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
  const row: BundleWrite = {
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
  };
  return { row, head, digest, issued_at: common.issued_at, delta: delta !== null };
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
  options: IssueOptions & { withEnvelope?: boolean } = {},
) {
  const ctx = await issueContext(db, deps, speaker.tenant_id, revisionId);
  const peers = await bundlePeersOf(db, speaker.id, ctx.communities, openPassword(deps.secretBox));
  const signed = await signedBundle(db, deps, ctx, speaker, peers, sequence, now, options);
  await upsertBundle(db, signed.row);
  // The whole signed bundle, for a caller that uses it at once (the local speaker).
  const envelope = options.withEnvelope ? Buffer.concat([signed.head, await openSection(db, deps, speaker.tenant_id, ctx.full)]) : null;
  return { sequence, digest: signed.digest, issued_at: signed.issued_at, envelope, delta: signed.delta };
}

/**
 * The same for many speakers of one apply, `speakers` carrying their new sequence
 * (`bundle_sequence`): their peers read in one query, the heads signed one after another, all
 * stored in one statement.
 */
export async function issueBundles(db: Db, deps: BundleDeps, ctx: IssueContext, speakers: SpeakerRow[], now: Date, options: IssueOptions = {}) {
  const communityValue = new Map(ctx.communities.map((c) => [c.id, c.community]));
  const password = openPassword(deps.secretBox);
  const peersOf = new Map<string, BundlePeer[]>();
  for (const p of await listPeersOfSpeakers(
    db,
    speakers.map((s) => s.id),
  )) {
    let list = peersOf.get(p.speaker_id);
    if (!list) peersOf.set(p.speaker_id, (list = []));
    list.push(bundlePeerOf(p, communityValue, password));
  }
  const issued: { speaker_id: string; sequence: number; digest: string }[] = [];
  const rows: BundleWrite[] = [];
  for (const speaker of speakers) {
    const sequence = Number(speaker.bundle_sequence);
    const signed = await signedBundle(db, deps, ctx, speaker, peersOf.get(speaker.id) ?? [], sequence, now, options);
    rows.push(signed.row);
    issued.push({ speaker_id: speaker.id, sequence, digest: signed.digest });
  }
  await upsertBundles(db, rows);
  return issued;
}
