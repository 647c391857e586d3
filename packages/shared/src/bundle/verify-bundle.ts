import { isBundleV2, verifyBundleV2 } from "./bundle-v2.js";
import { parseJsonBytes } from "./canonical-json.js";
import { BundleError } from "./errors.js";
import { type BundlePayload, computeBundleDigest } from "./payload.js";
import {
  BUNDLE_FORMAT,
  checkAddressee,
  DEFAULT_MAX_BUNDLE_BYTES,
  findKey,
  fromBase64,
  type PinnedKey,
  SIGNING_ALG,
  type SignedBundle,
  sodiumReady,
  type VerifiedBundle,
  type VerifyOptions,
  verifyDetached,
} from "./sign.js";

// Apart from sign.ts: verifying reads either format, and rl-bundle/2 builds on sign.ts's
// primitives, so the two formats meet here rather than in a cycle between them.

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
    return {
      payload: v2.payload,
      payloadBytes: v2.payloadBytes,
      keyId: v2.keyId,
      prefixSection: v2.prefixSection,
      section: v2.header.section,
      ...(v2.prefixPages ? { prefixPages: v2.prefixPages } : {}),
    };
  }
  const envelope = readEnvelope(input, maxBytes);
  const key = findKey(pinnedKeys, envelope.key_id);
  const payloadBytes = fromBase64(envelope.payload, "payload");
  if (typeof input === "object" && !(input instanceof Uint8Array) && payloadBytes.length > maxBytes) {
    throw new BundleError("too_large", `bundle payload has ${payloadBytes.length} bytes, the cap is ${maxBytes}`);
  }
  await sodiumReady();
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
