import { type BundleConfig, type BundleHeaderV2, splitBundleV2 } from "./bundle-v2.js";
import { parseJsonBytes } from "./canonical-json.js";
import { BundleError } from "./errors.js";
import { type BundleContent, buildBundlePayload } from "./payload.js";
import { decodePrefixSection } from "./prefix-section.js";
import { signBundle } from "./sign.js";

/**
 * `rl-bundle/1`, the format of the release before `rl-bundle/2`: a JSON envelope
 * (`format`, `key_id`, `alg`, `payload`, `signature`) whose payload is the base64 of the
 * canonical JSON of the whole content, prefixes included, with sequence, times and the digest of
 * {@link computeBundleDigest}. The controller writes it, from the `rl-bundle/2` it issued, for
 * an agent that accepts nothing newer; {@link verifyBundle} still reads it.
 */
export interface BundleV1Options {
  /** false: `force_confirm` is left out (the agent did not announce it). */
  forceConfirm: boolean;
}

/**
 * The `rl-bundle/1` of the same content, sequence and times as a full `rl-bundle/2` (its head
 * and the revision's full prefix section), signed with `key`. Nothing is checked: the bytes are
 * the controller's own. Answers the envelope's JSON bytes and its payload's digest.
 */
export async function bundleV1FromV2(
  head: Uint8Array,
  section: Uint8Array,
  key: { keyId: string; secretKey: Uint8Array },
  options: BundleV1Options,
): Promise<{ bytes: Buffer; digest: string }> {
  const parts = splitBundleV2(Buffer.concat([head, section]));
  const header = parseJsonBytes(parts.header, "bundle header") as BundleHeaderV2;
  if (header.section !== "full") throw new BundleError("unsupported_format", "an rl-bundle/1 is written from a full rl-bundle/2, not a delta");
  const { force_confirm, ...config } = parseJsonBytes(parts.config, "bundle config") as BundleConfig;
  const content: BundleContent = {
    ...config,
    prefixes: decodePrefixSection(parts.section),
    ...(force_confirm && options.forceConfirm ? { force_confirm } : {}),
  };
  const payload = buildBundlePayload(content, {
    sequence: header.sequence,
    issuedAt: new Date(header.issued_at),
    expiresAt: new Date(header.expires_at),
  });
  const envelope = await signBundle(payload, key.secretKey, key.keyId);
  return { bytes: Buffer.from(JSON.stringify(envelope), "utf8"), digest: payload.digest };
}
