import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { isBundleV2, type ReceivedBundle, verifyBundleV2 } from "./bundle-v2.js";
import { canonicalJsonBytes, parseJsonBytes } from "./canonical-json.js";
import { BundleError } from "./errors.js";
import { type BundlePayload, computeBundleDigest } from "./payload.js";

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
 * Checks a signed bundle (`rl-bundle/2` bytes go to {@link verifyBundleV2}) in the order that spends the least on a hostile one: size, envelope,
 * key, then the signature over the raw payload bytes; only signed bytes are ever parsed. Then
 * speaker, tenant, sequence, expiry and digest. Throws {@link BundleError}.
 */
export async function verifyBundle(
  input: Uint8Array | string | SignedBundle,
  pinnedKeys: readonly PinnedKey[],
  options: VerifyOptions,
): Promise<VerifiedBundle> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BUNDLE_BYTES;
  if (isBundleV2(input)) {
    const v2 = await verifyBundleV2(input as Uint8Array, pinnedKeys, { ...options, maxBytes });
    return { payload: v2.payload, payloadBytes: v2.payloadBytes, keyId: v2.keyId, prefixSection: v2.prefixSection, section: v2.header.section };
  }
  const envelope = readEnvelope(input, maxBytes);
  const key = findKey(pinnedKeys, envelope.key_id);
  const payloadBytes = fromBase64(envelope.payload, "payload");
  if (typeof input === "object" && !(input instanceof Uint8Array) && payloadBytes.length > maxBytes) {
    throw new BundleError("too_large", `bundle payload has ${payloadBytes.length} bytes, the cap is ${maxBytes}`);
  }
  await sodium.ready;
  if (!verifyDetached(fromBase64(envelope.signature, "signature"), payloadBytes, key)) {
    throw new BundleError("bad_signature", `signature does not verify with key ${envelope.key_id}`);
  }
  const payload = parsePayload(payloadBytes);
  checkAddressee(payload, options);
  const digest = computeBundleDigest(payload);
  if (digest !== payload.digest) {
    throw new BundleError("digest_mismatch", `payload digest ${payload.digest} does not match its content (${digest})`);
  }
  return { payload, payloadBytes, keyId: envelope.key_id };
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

export async function signDetached(message: Uint8Array, secretKey: Uint8Array): Promise<Uint8Array> {
  await sodium.ready;
  return sodium.crypto_sign_detached(message, secretKey);
}

function readEnvelope(input: Uint8Array | string | SignedBundle, maxBytes: number): SignedBundle {
  let value: unknown = input;
  if (typeof input === "string" || input instanceof Uint8Array) {
    const size = typeof input === "string" ? Buffer.byteLength(input) : input.length;
    if (size > maxBytes) throw new BundleError("too_large", `bundle has ${size} bytes, the cap is ${maxBytes}`);
    try {
      value = JSON.parse(typeof input === "string" ? input : Buffer.from(input.buffer, input.byteOffset, input.length).toString("utf8"));
    } catch (cause) {
      throw new BundleError("malformed", "bundle envelope is not JSON", { cause });
    }
  }
  const e = value as Partial<SignedBundle> | null;
  if (!e || typeof e !== "object" || typeof e.key_id !== "string" || typeof e.payload !== "string" || typeof e.signature !== "string") {
    throw new BundleError("malformed", "bundle envelope lacks key_id, payload or signature");
  }
  if (e.format !== BUNDLE_FORMAT || e.alg !== SIGNING_ALG) {
    throw new BundleError("unsupported_format", `bundle format ${String(e.format)}/${String(e.alg)} is not ${BUNDLE_FORMAT}/${SIGNING_ALG}`);
  }
  return e as SignedBundle;
}

function parsePayload(bytes: Uint8Array): BundlePayload {
  const p = parseJsonBytes(bytes, "signed payload") as Partial<BundlePayload> | null;
  const ok =
    p !== null &&
    typeof p === "object" &&
    !Array.isArray(p) &&
    typeof p.speaker_id === "string" &&
    typeof p.tenant_id === "string" &&
    Number.isSafeInteger(p.sequence) &&
    typeof p.expires_at === "string" &&
    typeof p.digest === "string";
  if (!ok) throw new BundleError("malformed", "signed payload lacks speaker_id, tenant_id, sequence, expires_at or digest");
  return p as BundlePayload;
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
