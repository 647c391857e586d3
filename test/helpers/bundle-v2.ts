import type { DesiredRevision } from "../../packages/agent/src/bundle/http-client.js";
import {
  type BundleContent,
  columnOf,
  configBytes,
  contentDigestV2,
  diffPrefixLines,
  encodePrefixSection,
  pagesOf,
  prefixLines,
  type SigningKeyPair,
  sha256Hex,
  signBundleHead,
} from "../../packages/shared/src/bundle/index.js";

const linesOf = (c: BundleContent) => prefixLines(columnOf(c.prefixes.v4), columnOf(c.prefixes.v6));

/**
 * An rl-bundle/2 of `content` as the controller issues it: full, or the delta from `base` (whose
 * prefixes the edit script applies to). `deltaFrom` builds the script from other prefixes than
 * the base the header names (a delta on a wrong base).
 */
export async function issueBundleV2(
  content: BundleContent,
  o: {
    sequence: number;
    key: SigningKeyPair;
    base?: BundleContent;
    deltaFrom?: BundleContent;
    tamper?: boolean;
    /** The page root in the header (rl-prefix-pages/1): the section's, another one, or none (a controller before it). */
    pages?: "right" | "wrong";
  },
): Promise<{ bytes: Buffer; desired: DesiredRevision }> {
  const { prefixes, ...config } = content;
  const full = encodePrefixSection(prefixes);
  const prefixesSha = sha256Hex(full);
  const section = o.base ? diffPrefixLines(linesOf(o.deltaFrom ?? o.base), linesOf(content)) : full;
  const issuedAt = new Date().toISOString();
  const digest = contentDigestV2(config, prefixesSha);
  const head = await signBundleHead(
    {
      tenant_id: content.tenant_id,
      speaker_id: content.speaker_id,
      revision_id: content.revision_id,
      sequence: o.sequence,
      issued_at: issuedAt,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      digest,
      prefixes_sha256: prefixesSha,
      ...(o.pages ? { prefixes_pages_sha256: o.pages === "right" ? pagesOf(full).root : sha256Hex(Buffer.from("another")) } : {}),
      section: o.base ? "delta" : "full",
      section_sha256: sha256Hex(section),
      section_size: section.length,
      ...(o.base ? { base_revision_id: o.base.revision_id, base_prefixes_sha256: sha256Hex(encodePrefixSection(o.base.prefixes)) } : {}),
    },
    configBytes(config),
    o.key,
  );
  const bytes = Buffer.concat([head, section]);
  if (o.tamper) bytes.writeUInt8(bytes[bytes.length - 3]! ^ 1, bytes.length - 3);
  return { bytes, desired: { revision_id: content.revision_id, digest, sequence: o.sequence, issued_at: issuedAt } };
}
