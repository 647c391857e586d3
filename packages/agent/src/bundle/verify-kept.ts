import {
  BundleError,
  type BundleHeaderV2,
  type BundleHeadV2,
  checkConfigV2,
  isBundleV2,
  type PinnedKey,
  payloadOfV2,
  type ReceivedBundle,
  splitBundleV2,
  type VerifiedBundle,
  type VerifyOptions,
  verifyBundle,
  verifyBundleHeadV2,
} from "@rlc/shared/bundle";
import type { PrefixDelta } from "../state.js";
import { applyKeptDelta, type KeptPrefixes, keptPrefixes } from "./kept-prefixes.js";

export interface VerifiedKept extends VerifiedBundle {
  /** A delta's rebuilt section with its line index: what the next delta applies to. Null for a full bundle. */
  kept: KeptPrefixes | null;
  /** A delta's own bytes and the SHA-256 of its base and of its result, as signed: what the state logs. */
  delta?: PrefixDelta;
}

/**
 * verifyBundle, with a delta applied to the prefixes the agent keeps in memory rather than to a
 * base split into lines, joined and decoded again, and with what the receiver hashed of the
 * bytes as they came. The signed parts are checked by verifyBundle itself: asked with no base,
 * it checks size, key, signature, speaker, tenant, sequence, expiry and the hashes of config
 * and delta, and stops at the base with `delta_base_mismatch`. Then, as it would: the base named
 * must be the one kept, the rebuilt section's SHA-256 the signed `prefixes_sha256` (before
 * anything is read from it), and config and content digest as checkConfigV2 checks them. A full
 * bundle, or a delta without a kept base, is verifyBundle's alone.
 */
export async function verifyKept(
  received: ReceivedBundle,
  pinnedKeys: readonly PinnedKey[],
  options: Omit<VerifyOptions, "base" | "received">,
  kept: KeptPrefixes | null,
): Promise<VerifiedKept> {
  const { bytes } = received;
  const plain = async () => ({ ...(await verifyBundle(bytes, pinnedKeys, { ...options, base: kept, received })), kept: null });
  if (!kept || !isBundleV2(bytes)) return plain();
  let parts: ReturnType<typeof splitBundleV2>;
  let header: BundleHeaderV2;
  try {
    // Read before it is verified only to choose the way; anything unreadable is verifyBundle's to refuse.
    parts = splitBundleV2(bytes);
    header = readJson<BundleHeaderV2>(parts.header, "header");
    if (header.section !== "delta") return plain();
  } catch {
    return plain();
  }
  try {
    return { ...(await verifyBundle(bytes, pinnedKeys, { ...options, base: null, received })), kept: null };
  } catch (error) {
    if (!(error instanceof BundleError) || error.code !== "delta_base_mismatch") throw error;
    // From here on the header (the same bytes) is the signed one.
    if (header.base_revision_id !== kept.revision_id || header.base_prefixes_sha256 !== kept.sha256) throw error;
    const rebuilt = applyKeptDelta(kept, header.revision_id, parts.section, header.prefixes_sha256);
    const { config, digest } = checkConfigV2(header, parts.config);
    const payload = payloadOfV2(header, config, keptPrefixes(rebuilt), digest);
    const delta = { bytes: parts.section, baseSha256: header.base_prefixes_sha256, sha256: header.prefixes_sha256 };
    return { payload, payloadBytes: parts.header, keyId: parts.keyId, prefixSection: rebuilt.section, section: "delta", kept: rebuilt, delta };
  }
}

function readJson<T>(bytes: Uint8Array, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new BundleError("malformed", `bundle ${what} is not UTF-8 JSON`, { cause });
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new BundleError("malformed", `bundle ${what} is not an object`);
  return value as T;
}

/**
 * The check of an rl-bundle/2's signed head as it arrives (key, signature, speaker, tenant,
 * sequence, expiry): a refusal there stops the transfer and stands as the verifier's would. A
 * key not pinned yet passes on to the sync loop's verify, which refreshes the pinned keys first.
 */
export function headCheck(keys: readonly PinnedKey[], options: Omit<VerifyOptions, "base" | "received">) {
  return (head: BundleHeadV2) => {
    try {
      verifyBundleHeadV2(head, keys, options);
    } catch (error) {
      if (!(error instanceof BundleError) || error.code !== "unknown_key") throw error;
    }
  };
}
