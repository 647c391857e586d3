import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { canonicalJsonBytes } from "./canonical-json.js";
import { BundleError } from "./errors.js";
import type { BundlePayload, ReceivedBundle } from "./payload.js";
import type { SectionPages } from "./prefix-pages.js";

// libsodium-wrappers 0.7.16's ESM build imports a file its package does not ship
// (dist/modules-esm/libsodium.mjs), so the CommonJS build is loaded instead. Where a plain
// `require` exists (the single-file agent, which esbuild bundles as CommonJS) it is the one
// used, written out so the bundler sees it and puts libsodium inside.
const sodium = (
  typeof require === "function" ? require("libsodium-wrappers") : createRequire(import.meta.url)("libsodium-wrappers")
) as typeof import("libsodium-wrappers");

export const BUNDLE_FORMAT = "rl-bundle/1";
export const SIGNING_ALG = "ed25519";
/** Default cap on a received bundle: a million prefixes take about 50 MiB of envelope. */
export const DEFAULT_MAX_BUNDLE_BYTES = 128 * 1024 * 1024;

export interface SigningKeyPair {
  keyId: string;
  /** Raw 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
  /** libsodium's 64-byte secret key (seed followed by the public key). */
  secretKey: Uint8Array;
  /** The 32-byte seed the pair was derived from; what a key file stores. */
  seed: Uint8Array;
}

/** A key as `GET /v1/nodes/signing-keys` lists it and an agent pins it. */
export interface PinnedKey {
  key_id: string;
  /** Raw 32 bytes, base64 (as listed) or as bytes. */
  public_key: string | Uint8Array;
  alg?: string;
  /** A retired key signs nothing more: bundles and statements signed by it are refused. */
  status?: "active" | "retired";
}

export interface SignedBundle {
  format: typeof BUNDLE_FORMAT;
  key_id: string;
  alg: typeof SIGNING_ALG;
  /** base64 of the canonical JSON bytes of the payload; the signature covers these bytes. */
  payload: string;
  signature: string;
}

export interface VerifyOptions {
  speakerId: string;
  tenantId: string;
  /** Sequence of the last applied bundle; null before the first. */
  lastSequence: number | null;
  now: Date | number;
  /** Cap on the envelope as received (bytes or string), or on the decoded payload of an object. */
  maxBytes?: number;
  /** `rl-bundle/2` deltas: the full prefix section of the last verified bundle, and its revision. */
  base?: { revision_id: number; section: Uint8Array } | null;
  /** What a {@link BundleReceiver} hashed of these very bytes as they arrived: not hashed again. */
  received?: ReceivedBundle | null;
  /**
   * `rl-bundle/2`: the payload's prefixes decoded only when read. For a caller that checks the
   * section's lines itself (the agent reads them into columns at once): a section it cannot
   * read must then be decoded, which refuses it as `malformed` as the eager decode would.
   */
  lazyPrefixes?: boolean;
}

export interface VerifiedBundle {
  payload: BundlePayload;
  /** The exact signed bytes, for keeping the last good bundle on disk. */
  payloadBytes: Uint8Array;
  keyId: string;
  /** `rl-bundle/2`: the revision's full prefix section (the base of the next delta). */
  prefixSection?: Uint8Array;
  /** `rl-bundle/2`: whether a full section or a delta came. */
  section?: "full" | "delta";
  /** A full `rl-bundle/2` whose header names a page root: the section's pages, checked against it (what the next delta's pages are made from). */
  prefixPages?: SectionPages;
}

/** First 16 hex digits of the SHA-256 of the raw 32-byte public key. */
export function keyIdOf(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new TypeError("keyIdOf: an Ed25519 public key has 32 bytes");
  return createHash("sha256").update(publicKey).digest("hex").slice(0, 16);
}

export async function signingKeyFromSeed(seed: Uint8Array): Promise<SigningKeyPair> {
  if (seed.length !== 32) throw new TypeError("signingKeyFromSeed: the seed must have 32 bytes");
  await sodium.ready;
  const pair = sodium.crypto_sign_seed_keypair(seed);
  return { keyId: keyIdOf(pair.publicKey), publicKey: pair.publicKey, secretKey: pair.privateKey, seed: Uint8Array.from(seed) };
}

export async function generateSigningKey(): Promise<SigningKeyPair> {
  return signingKeyFromSeed(randomBytes(32));
}

/** Signs the canonical JSON of `payload` as it is; {@link buildBundlePayload} fills the digest. */
export async function signBundle(payload: BundlePayload, secretKey: Uint8Array, keyId: string): Promise<SignedBundle> {
  await sodium.ready;
  const bytes = canonicalJsonBytes(payload);
  const signature = sodium.crypto_sign_detached(bytes, secretKey);
  return { format: BUNDLE_FORMAT, key_id: keyId, alg: SIGNING_ALG, payload: toBase64(bytes), signature: toBase64(signature) };
}

/**
 * The checks of a signed bundle of either format, on what its signed part says: for this
 * speaker and tenant, above the last applied sequence, not expired.
 */
export function checkAddressee(signed: Pick<BundlePayload, "speaker_id" | "tenant_id" | "sequence" | "expires_at">, options: VerifyOptions): void {
  if (signed.speaker_id !== options.speakerId) throw new BundleError("wrong_speaker", `bundle is for speaker ${signed.speaker_id}, not ${options.speakerId}`);
  if (signed.tenant_id !== options.tenantId) throw new BundleError("wrong_tenant", `bundle is for tenant ${signed.tenant_id}, not ${options.tenantId}`);
  if (!Number.isSafeInteger(signed.sequence)) throw new BundleError("malformed", "bundle header lacks its sequence");
  if (options.lastSequence !== null && signed.sequence <= options.lastSequence) {
    throw new BundleError("stale_sequence", `sequence ${signed.sequence} is not above the last applied ${options.lastSequence}`);
  }
  const now = typeof options.now === "number" ? options.now : options.now.getTime();
  if (!(Date.parse(signed.expires_at) > now)) throw new BundleError("expired", `bundle expired at ${signed.expires_at}`);
}

/** The pinned, non-retired key named `keyId`. Shared with key statements. */
export function findKey(pinnedKeys: readonly PinnedKey[], keyId: string): Uint8Array {
  const key = pinnedKeys.find((k) => k.key_id === keyId);
  if (!key) throw new BundleError("unknown_key", `key ${keyId} is not pinned`);
  if (key.status === "retired") throw new BundleError("retired_key", `key ${keyId} is retired`);
  if (key.alg !== undefined && key.alg !== SIGNING_ALG) throw new BundleError("unsupported_format", `key ${keyId} is ${key.alg}`);
  const raw = typeof key.public_key === "string" ? fromBase64(key.public_key, "public_key") : key.public_key;
  if (raw.length !== 32) throw new BundleError("malformed", `pinned key ${keyId} is not 32 bytes`);
  return raw;
}

/** Ed25519 detached verification; false (never a throw) for any wrong-sized input. */
export function verifyDetached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || publicKey.length !== 32) return false;
  try {
    return sodium.crypto_sign_verify_detached(signature, message, publicKey);
  } catch {
    return false;
  }
}

/** libsodium, once its WebAssembly is loaded (verifyDetached needs it ready). */
export async function sodiumReady(): Promise<void> {
  await sodium.ready;
}

export async function signDetached(message: Uint8Array, secretKey: Uint8Array): Promise<Uint8Array> {
  await sodium.ready;
  return sodium.crypto_sign_detached(message, secretKey);
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("base64");
}

/** Strict base64: Buffer.from would skip stray characters, so the text must round-trip. */
export function fromBase64(text: string, what: string): Uint8Array {
  const bytes = Buffer.from(text, "base64");
  if (bytes.toString("base64") !== text) throw new BundleError("malformed", `${what} is not canonical base64`);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}
