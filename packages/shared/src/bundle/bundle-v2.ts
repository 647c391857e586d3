import { createHash } from "node:crypto";
import { canonicalJson, canonicalJsonBytes, parseJsonBytes } from "./canonical-json.js";
import { BundleError } from "./errors.js";
import type { BundleContent, BundlePayload } from "./payload.js";
import { applyPrefixDeltaBytes } from "./prefix-delta.js";
import { pagesOf, type SectionPages } from "./prefix-pages.js";
import { decodePrefixSection, lazyPrefixes } from "./prefix-section.js";
import { checkAddressee, findKey, type PinnedKey, SIGNING_ALG, signDetached, type VerifyOptions, verifyDetached } from "./sign.js";

/**
 * `rl-bundle/2`: what a speaker is sent, as bytes, in this order:
 *
 *   `rl-bundle/2\n`, the signing key's id (16 hex digits) and `\n`;
 *   the header's length (4 bytes, big-endian) and the header: canonical JSON, a few hundred bytes;
 *   the Ed25519 signature of the header (64 bytes);
 *   the config's length (4 bytes) and the config: JSON of every content field but the prefixes;
 *   the prefix section (full) or the edit script from a base revision's section (delta).
 *
 * The signature covers the header only; the header holds the SHA-256 of the config and of the
 * section, so signing and verifying cost the same for 10 prefixes as for a million, and the
 * hashes are native SHA-256 over compact bytes instead of canonical JSON of every prefix.
 */
export const BUNDLE_FORMAT_V2 = "rl-bundle/2";
const MAGIC = Buffer.from(`${BUNDLE_FORMAT_V2}\n`, "latin1");
const KEY_ID_BYTES = 16;
const MAX_HEADER_BYTES = 64 * 1024;
const SIGNATURE_BYTES = 64;

export interface BundleHeaderV2 {
  format: typeof BUNDLE_FORMAT_V2;
  alg: typeof SIGNING_ALG;
  key_id: string;
  tenant_id: string;
  speaker_id: string;
  revision_id: number;
  sequence: number;
  issued_at: string;
  expires_at: string;
  /** `sha256:<hex>` of the content, see {@link contentDigestV2}. */
  digest: string;
  config_sha256: string;
  /** Hex SHA-256 of the revision's full prefix section, whether this bundle carries it or a delta. */
  prefixes_sha256: string;
  /**
   * The page root (`rl-prefix-pages/1`, prefix-pages.ts) of the same section: a reader that keeps
   * its base's page digests checks a delta by hashing only the pages it touched. Optional: a
   * controller of the release before does not send it (the reader checks `prefixes_sha256`), and
   * an agent of the release before ignores it (the header is read as plain JSON).
   */
  prefixes_pages_sha256?: string;
  section: "full" | "delta";
  section_sha256: string;
  section_size: number;
  /** Delta only: the revision whose section the edit script applies to, and that section's SHA-256. */
  base_revision_id?: number;
  base_prefixes_sha256?: string;
}

/** Every content field but the prefixes. */
export type BundleConfig = Omit<BundleContent, "prefixes">;

export const sha256Hex = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/**
 * `sha256:` + SHA-256 of the canonical JSON of the config, a newline and the hex SHA-256 of the
 * full prefix section: the same for a full bundle and a delta of the same content, and for a
 * re-issue (sequence and times are not content).
 */
export function contentDigestV2(config: BundleConfig, prefixesSha256: string): string {
  return `sha256:${sha256Hex(`${canonicalJson(config)}\n${prefixesSha256}`)}`;
}

/** The part of a bundle before its section: key id, header, signature, config. */
export async function signBundleHead(
  header: Omit<BundleHeaderV2, "format" | "alg" | "key_id" | "config_sha256">,
  config: Uint8Array,
  key: { keyId: string; secretKey: Uint8Array },
): Promise<Buffer> {
  if (!/^[0-9a-f]{16}$/.test(key.keyId)) throw new TypeError("signBundleHead: a key id has 16 hex digits");
  const full: BundleHeaderV2 = { ...header, format: BUNDLE_FORMAT_V2, alg: SIGNING_ALG, key_id: key.keyId, config_sha256: sha256Hex(config) };
  const headerBytes = canonicalJsonBytes(full);
  const signature = await signDetached(headerBytes, key.secretKey);
  return Buffer.concat([MAGIC, Buffer.from(`${key.keyId}\n`, "latin1"), u32(headerBytes.length), headerBytes, signature, u32(config.length), config]);
}

export const configBytes = (config: BundleConfig) => Buffer.from(JSON.stringify(config), "utf8");

/** Whether `bytes` start as an `rl-bundle/2` does (anything else is the rl-bundle/1 JSON envelope, or nothing). */
export function isBundleV2(bytes: Uint8Array | string | object): boolean {
  return bytes instanceof Uint8Array && bytes.length >= MAGIC.length && Buffer.from(bytes.buffer, bytes.byteOffset, MAGIC.length).equals(MAGIC);
}

/** The same options as verifyBundle's (maxBytes caps the whole bundle). */
export type VerifyV2Options = VerifyOptions;

export interface VerifiedBundleV2 {
  payload: BundlePayload;
  header: BundleHeaderV2;
  /** The exact signed bytes (the header). */
  payloadBytes: Uint8Array;
  keyId: string;
  /** The revision's full prefix section: received, or rebuilt from the base and the delta. */
  prefixSection: Uint8Array;
  /** A full bundle whose header names a page root: the section's pages, checked against it. */
  prefixPages?: SectionPages;
}

/** Where the parts of an `rl-bundle/2` lie: the header, the signature, the config, and the section from `sectionStart` to the end. */
export interface BundleLayoutV2 {
  keyId: string;
  headerStart: number;
  signatureStart: number;
  configStart: number;
  sectionStart: number;
}

/**
 * The layout of an `rl-bundle/2` read from its first bytes, bounds checked; `null` while too few
 * of them are in to tell (a receiver asks again with more). Throws `malformed` for bytes that
 * can never be one. Nothing in them is trusted yet.
 */
export function bundleLayoutV2(bytes: Uint8Array): BundleLayoutV2 | null {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let at = MAGIC.length;
  if (b.length < at + KEY_ID_BYTES + 1 + 4) return null;
  const keyId = b.toString("latin1", at, at + KEY_ID_BYTES);
  if (b[at + KEY_ID_BYTES] !== 0x0a) throw new BundleError("malformed", "bundle key id is not 16 characters");
  at += KEY_ID_BYTES + 1;
  const headerLength = b.readUInt32BE(at);
  at += 4;
  if (headerLength > MAX_HEADER_BYTES) throw new BundleError("malformed", `bundle header of ${headerLength} bytes`);
  const headerStart = at;
  const signatureStart = headerStart + headerLength;
  if (b.length < signatureStart + SIGNATURE_BYTES + 4) return null;
  const configStart = signatureStart + SIGNATURE_BYTES + 4;
  return { keyId, headerStart, signatureStart, configStart, sectionStart: configStart + b.readUInt32BE(configStart - 4) };
}

/** The parts of an `rl-bundle/2`, bounds checked; nothing in them is trusted yet. */
export function splitBundleV2(bytes: Uint8Array): { keyId: string; header: Uint8Array; signature: Uint8Array; config: Uint8Array; section: Uint8Array } {
  const layout = bundleLayoutV2(bytes);
  if (!layout || layout.sectionStart > bytes.length) throw new BundleError("malformed", "bundle ends before its parts do");
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  return {
    keyId: layout.keyId,
    header: b.subarray(layout.headerStart, layout.signatureStart),
    signature: b.subarray(layout.signatureStart, layout.signatureStart + SIGNATURE_BYTES),
    config: b.subarray(layout.configStart, layout.sectionStart),
    section: b.subarray(layout.sectionStart),
  };
}

/** The signed head of an `rl-bundle/2`: its key id, header and the header's signature. */
export interface BundleHeadV2 {
  keyId: string;
  header: Uint8Array;
  signature: Uint8Array;
}

/**
 * The checks a bundle's head allows before anything after it is read: key, signature over the
 * header, format, then speaker, tenant, sequence and expiry. Answers the signed header; throws
 * {@link BundleError}. A receiver runs it as soon as the head is in, so a forged, stale or
 * misaddressed bundle is refused at its first chunk rather than after megabytes.
 */
export function verifyBundleHeadV2(head: BundleHeadV2, pinnedKeys: readonly PinnedKey[], options: VerifyV2Options): BundleHeaderV2 {
  const key = findKey(pinnedKeys, head.keyId);
  if (!verifyDetached(head.signature, head.header, key)) throw new BundleError("bad_signature", `signature does not verify with key ${head.keyId}`);
  const header = parseJson<BundleHeaderV2>(head.header, "header");
  if (header.format !== BUNDLE_FORMAT_V2 || header.alg !== SIGNING_ALG || header.key_id !== head.keyId) {
    throw new BundleError("unsupported_format", `bundle header says ${String(header.format)}/${String(header.alg)}`);
  }
  checkAddressee(header, options);
  return header;
}

/** The receiver's hashes of config and section, when they are of `bytes` split as `layout` splits them. */
function receivedPartHashes(bytes: Uint8Array, options: VerifyV2Options): { config: string; section: string } | null {
  const r = options.received;
  if (!r || r.bytes !== bytes || !r.v2) return null;
  const layout = bundleLayoutV2(bytes);
  if (!layout || layout.configStart !== r.v2.configStart || layout.sectionStart !== r.v2.sectionStart) return null;
  return { config: r.v2.configSha256, section: r.v2.sectionSha256 };
}

/**
 * After the section checked out: the config must name the header's speaker, tenant and
 * revision, and the content digest over config and `prefixesSha256` must be the signed one.
 * Answers the config and the digest; what a verifier that rebuilds the section its own way
 * (the agent, from the prefixes it keeps) runs too.
 */
export function checkConfigV2(header: BundleHeaderV2, configBytes: Uint8Array): { config: BundleConfig; digest: string } {
  const config = parseJson<BundleConfig>(configBytes, "config");
  if (config.speaker_id !== header.speaker_id || config.tenant_id !== header.tenant_id || config.revision_id !== header.revision_id) {
    throw new BundleError("malformed", "bundle config names another speaker, tenant or revision than its header");
  }
  const digest = contentDigestV2(config, header.prefixes_sha256);
  if (digest !== header.digest) throw new BundleError("digest_mismatch", `header digest ${header.digest} does not match its content (${digest})`);
  return { config, digest };
}

/**
 * Checks an `rl-bundle/2` in the order that spends the least on a hostile one: size, key,
 * signature over the header (small: microseconds), speaker, tenant, sequence, expiry, then the
 * hashes of config and section (native SHA-256), a delta's base, the rebuilt section and the
 * content digest. A section whose hash is not the signed one is `bad_signature`, as a tampered
 * full bundle is. A delta over a missing or different base is `delta_base_mismatch`: the caller
 * fetches the full bundle instead.
 */
export async function verifyBundleV2(bytes: Uint8Array, pinnedKeys: readonly PinnedKey[], options: VerifyV2Options): Promise<VerifiedBundleV2> {
  if (options.maxBytes !== undefined && bytes.length > options.maxBytes) {
    throw new BundleError("too_large", `bundle has ${bytes.length} bytes, the cap is ${options.maxBytes}`);
  }
  const parts = splitBundleV2(bytes);
  const header = verifyBundleHeadV2(parts, pinnedKeys, options);
  // Hashed as the bytes arrived when a receiver did; each hashed here otherwise.
  const hashed = receivedPartHashes(bytes, options);
  const sectionSha256 = hashed?.section ?? sha256Hex(parts.section);
  if (
    (hashed?.config ?? sha256Hex(parts.config)) !== header.config_sha256 ||
    parts.section.length !== header.section_size ||
    sectionSha256 !== header.section_sha256
  ) {
    throw new BundleError("bad_signature", "config or prefix section is not what the signed header names");
  }
  let section: Uint8Array = parts.section;
  let prefixesSha256 = sectionSha256;
  if (header.section === "delta") {
    const base = options.base;
    if (!base || base.revision_id !== header.base_revision_id || sha256Hex(base.section) !== header.base_prefixes_sha256) {
      throw new BundleError(
        "delta_base_mismatch",
        `delta from revision ${header.base_revision_id}, and the agent holds ${base ? `revision ${base.revision_id}` : "no base"} of another content`,
      );
    }
    try {
      section = applyPrefixDeltaBytes(base.section, parts.section);
    } catch (cause) {
      // Signed, so the controller's own mistake: the rebuilt prefixes cannot be the revision's.
      throw new BundleError("digest_mismatch", `the delta does not fit the base it names: ${(cause as Error).message}`, { cause });
    }
    prefixesSha256 = sha256Hex(section);
  } else if (header.section !== "full") {
    throw new BundleError("unsupported_format", `bundle section ${String(header.section)}`);
  }
  if (prefixesSha256 !== header.prefixes_sha256) {
    throw new BundleError("digest_mismatch", `the prefixes ${header.section === "delta" ? "rebuilt from the delta" : "received"} are not the revision's`);
  }
  // A full section is where a reader starts keeping page digests: a wrong root (the controller's
  // bug) is refused here, before a delta is ever checked against pages made of it. A delta's
  // too, so that every reader refuses the same bundles (the agent checks a delta by the root).
  const prefixPages = header.prefixes_pages_sha256 !== undefined ? pagesOf(section) : undefined;
  if (prefixPages && prefixPages.root !== header.prefixes_pages_sha256) {
    throw new BundleError(
      "digest_mismatch",
      `the prefixes ${header.section === "delta" ? "rebuilt from the delta" : "received"} do not have the page root the header names`,
    );
  }
  const { config, digest } = checkConfigV2(header, parts.config);
  const payload = payloadOfV2(header, config, options.lazyPrefixes ? lazyPrefixes(section) : decodePrefixSection(section), digest);
  return { payload, header, payloadBytes: parts.header, keyId: parts.keyId, prefixSection: section, ...(prefixPages ? { prefixPages } : {}) };
}

/**
 * The payload of an `rl-bundle/2` the agent verified before and kept (its own file), with the
 * full prefix section kept beside it; no check but the parse.
 */
export function readKeptBundleV2(bytes: Uint8Array, prefixSection: Uint8Array): BundlePayload {
  const parts = splitBundleV2(bytes);
  const header = parseJson<BundleHeaderV2>(parts.header, "header");
  return payloadOfV2(header, parseJson<BundleConfig>(parts.config, "config"), decodePrefixSection(prefixSection), header.digest);
}

/** The payload the agent applies: the bundle's config and prefixes, with the signed header's sequence and times. */
export function payloadOfV2(header: BundleHeaderV2, config: BundleConfig, prefixes: BundlePayload["prefixes"], digest: string): BundlePayload {
  return { ...config, prefixes, sequence: header.sequence, issued_at: header.issued_at, expires_at: header.expires_at, digest };
}

function parseJson<T>(bytes: Uint8Array, what: string): T {
  const value = parseJsonBytes(bytes, `bundle ${what}`);
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new BundleError("malformed", `bundle ${what} is not an object`);
  return value as T;
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n);
  return b;
}
