import {
  BundleError,
  type BundleHeaderV2,
  type BundleHeadV2,
  checkConfigV2,
  chunkedBytes,
  isBundleV2,
  lazyPrefixes,
  type PinnedKey,
  payloadOfV2,
  type ReceivedBundle,
  type SectionTags,
  splitBundleV2,
  type VerifiedBundle,
  type VerifyOptions,
  verifyBundle,
  verifyBundleHeadV2,
} from "@rlc/shared/bundle";
import type { PrefixDelta } from "../state.js";
import { applyKeptDelta, type KeptDelta, type KeptPrefixes, keepSection } from "./kept-prefixes.js";

export interface VerifiedKept extends VerifiedBundle {
  /** The section in columns: what the render writes from and the next delta applies to. Null for an rl-bundle/1 (or a section the columns do not take). */
  kept: KeptPrefixes | null;
  /** A delta's changes over the section it applied to (what the render writes again); null for a full bundle. */
  delta: KeptDelta | null;
  /** A delta's own bytes and the SHA-256 of its base and of its result, as signed: what the state logs. */
  deltaRecord?: PrefixDelta;
}

/**
 * verifyBundle, with a delta applied to the prefixes the agent keeps in memory rather than to a
 * base split into lines, joined and decoded again, and with what the receiver hashed of the
 * bytes as they came. The signed parts are checked by verifyBundle itself: asked with no base,
 * it checks size, key, signature, speaker, tenant, sequence, expiry and the hashes of config
 * and delta, and stops at the base with `delta_base_mismatch`. Then, as it would: the base named
 * must be the one kept, the rebuilt section's SHA-256 the signed `prefixes_sha256` (before
 * anything is read from it), and config and content digest as checkConfigV2 checks them. A full
 * bundle, or a delta without a kept base, is verifyBundle's, its section then put in columns
 * (numbered by `tags`, the agent's one numbering). The payload's prefixes are decoded only when
 * something reads them.
 */
export async function verifyKept(
  received: ReceivedBundle,
  pinnedKeys: readonly PinnedKey[],
  options: Omit<VerifyOptions, "base" | "received">,
  kept: KeptPrefixes | null,
  tags: SectionTags,
): Promise<VerifiedKept> {
  const { bytes } = received;
  const plain = async (): Promise<VerifiedKept> => {
    // The section's lines are read into columns here, not decoded into a tuple each (~100 MB at 1.2M).
    const verified = await verifyBundle(bytes, pinnedKeys, { ...options, base: null, received, lazyPrefixes: true });
    const section = verified.prefixSection;
    const columns = section ? keepSection(verified.payload.revision_id, section, tags, verified.prefixPages ?? null) : null;
    // A section the columns do not take: decoded now, which refuses what is no section as before.
    if (section && !columns) void verified.payload.prefixes.v4;
    return { ...verified, kept: columns, delta: null };
  };
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
    await verifyBundle(bytes, pinnedKeys, { ...options, base: null, received });
    throw new BundleError("delta_base_mismatch", "a delta bundle verified without its base");
  } catch (error) {
    if (!(error instanceof BundleError) || error.code !== "delta_base_mismatch") throw error;
    // From here on the header (the same bytes) is the signed one.
    if (header.base_revision_id !== kept.revision_id || header.base_prefixes_sha256 !== kept.sha256) throw error;
    const rebuilt = applyKeptDelta(kept, parts.section, {
      revisionId: header.revision_id,
      sha256: header.prefixes_sha256,
      pagesRoot: header.prefixes_pages_sha256,
    });
    const { config, digest } = checkConfigV2(header, parts.config);
    // The section's bytes whole only for what asks for them (a payload's prefixes decoded, the state's base rewritten).
    let joined: Buffer | null = null;
    const section = () => (joined ??= chunkedBytes(rebuilt.kept.section));
    const payload = payloadOfV2(header, config, lazyPrefixes(section), digest);
    const deltaRecord = { bytes: parts.section, baseSha256: header.base_prefixes_sha256, sha256: header.prefixes_sha256 };
    return {
      payload,
      payloadBytes: parts.header,
      keyId: parts.keyId,
      get prefixSection() {
        return section();
      },
      section: "delta",
      kept: rebuilt.kept,
      delta: rebuilt.delta,
      deltaRecord,
    };
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
