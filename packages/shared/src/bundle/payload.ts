import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical-json.js";

/** `policies_json` of a speaker; further keys are kept as they are. */
export interface SpeakerPolicies {
  local_ip?: string;
  local_ipv6?: string;
  local_asn?: number;
  local_port?: number;
  next_hop_ipv4?: string;
  next_hop_ipv6?: string;
  [key: string]: unknown;
}

/** The tenant's `BIRD` setting; further keys are kept as they are. */
export interface BirdSettings {
  bird_bgp_source_ipv4?: string;
  bird_bgp_source_ipv6?: string;
  router_id?: string;
  local_asn?: number;
  next_hop_ipv4?: string;
  next_hop_ipv6?: string;
  exclude_prefixes?: string[];
  min_prefix_length_v4?: number;
  min_prefix_length_v6?: number;
  static_route_kind?: "blackhole" | "unreachable";
  configure_timeout_seconds?: number;
  /** The probation window: how long the agent watches BIRD before it confirms. */
  confirm_after_seconds?: number;
  /** false: the agent confirms without asking whether it still reaches the controller. */
  probation_check_controller?: boolean;
  [key: string]: unknown;
}

/**
 * What the agent assumes when the `BIRD` setting leaves these out; the settings schema checks
 * against the same figures, so the controller refuses what the agent could not honour.
 */
export const BIRD_DEFAULTS = {
  configure_timeout_seconds: 30,
  confirm_after_seconds: 10,
  probation_check_controller: true,
} as const;

/**
 * The configure timeout must outlast the probation window by this much: the last look at the
 * sessions, the controller check and `configure confirm` happen after the window, before BIRD's
 * own timer would undo the configuration.
 */
export const PROBATION_CONFIRM_MARGIN_SECONDS = 5;

export interface BundleSpeaker {
  router_id: string;
  asn: number;
  policies_json: SpeakerPolicies;
}

export interface BundleCommunity {
  id: string;
  /** `ASN:VALUE` (standard) or `ASN:V1:V2` (large), canonical. */
  community: string;
  title: string;
}

export interface BundlePeer {
  id: string;
  name: string;
  neighbor_address: string;
  neighbor_port: number;
  remote_asn: number;
  /** null = fall back to the speaker's policies, the BIRD setting, then the speaker's ASN. */
  local_asn: number | null;
  /** Present only when the peer has one; the bundle is the one place it travels. */
  password?: string;
  /** false, true (BIRD's default TTL) or a TTL 1..255. */
  multihop: boolean | number;
  address_families: ("ipv4" | "ipv6")[];
  /** Community values (not ids); empty = every prefix of the revision. */
  export_communities: string[];
}

/** `[prefix, [community, ...]]`, the communities as canonical values. */
export type BundlePrefix = [string, string[]];

export interface BundlePrefixes {
  v4: BundlePrefix[];
  v6: BundlePrefix[];
}

/** What a revision says for one speaker: the fields the digest covers. */
export interface BundleContent {
  tenant_id: string;
  speaker_id: string;
  revision_id: number;
  speaker: BundleSpeaker;
  bird: BirdSettings;
  communities: BundleCommunity[];
  peers: BundlePeer[];
  prefixes: BundlePrefixes;
  /**
   * Present (true) only when the apply asked for `force_confirm`: the agent skips the session
   * and route checks of its probation, for a change meant to take a session down. Signed like
   * the rest, so only the controller can set it.
   */
  force_confirm?: true;
}

/** The payload of a signed bundle (`rl-bundle/1`). */
export interface BundlePayload extends BundleContent {
  /** Counts up per speaker with every bundle issued, a re-issue or a rollback too. */
  sequence: number;
  issued_at: string;
  expires_at: string;
  /** `sha256:<hex>`, see {@link computeBundleDigest}. */
  digest: string;
}

/**
 * Fields of the payload that say when and how often a bundle was issued, not what it holds.
 * They are left out of the digest, so a re-issue of the same content (new sequence, new expiry)
 * keeps its digest and an agent can tell "nothing to render" from the digest alone.
 */
export const DIGEST_EXCLUDED_FIELDS = ["digest", "sequence", "issued_at", "expires_at"] as const;

/**
 * `sha256:` + the hex SHA-256 of the canonical JSON of the content fields: every payload field
 * except {@link DIGEST_EXCLUDED_FIELDS}. Unknown fields of a newer controller count too, so an
 * agent never applies content the digest did not cover.
 */
export function computeBundleDigest(payload: BundleContent | BundlePayload): string {
  const content: Record<string, unknown> = { ...payload };
  for (const field of DIGEST_EXCLUDED_FIELDS) delete content[field];
  return `sha256:${createHash("sha256").update(canonicalJson(content)).digest("hex")}`;
}

export interface IssueOptions {
  sequence: number;
  issuedAt: Date;
  /** Default: 7 days after `issuedAt`. */
  expiresAt?: Date;
}

export const DEFAULT_BUNDLE_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

/** A payload for `content`, with its digest filled in. */
export function buildBundlePayload(content: BundleContent, options: IssueOptions): BundlePayload {
  const expiresAt = options.expiresAt ?? new Date(options.issuedAt.getTime() + DEFAULT_BUNDLE_LIFETIME_MS);
  return {
    ...content,
    sequence: options.sequence,
    issued_at: options.issuedAt.toISOString(),
    expires_at: expiresAt.toISOString(),
    digest: computeBundleDigest(content),
  };
}

/**
 * A bundle as a receiver took it in: its bytes, and what it hashed of them as they arrived (the
 * SHA-256 of the whole, and of an `rl-bundle/2`'s config and section). The hashes are only used
 * for these very bytes, split where they say; a verifier given other bytes hashes them itself.
 */
export interface ReceivedBundle {
  bytes: Uint8Array;
  sha256: string;
  v2: { configStart: number; sectionStart: number; configSha256: string; sectionSha256: string } | null;
}
