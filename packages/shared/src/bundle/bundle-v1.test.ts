import { describe, expect, it } from "vitest";
import { bundleV1FromV2 } from "./bundle-v1.js";
import { type BundleConfig, configBytes, contentDigestV2, sha256Hex, signBundleHead, verifyBundleV2 } from "./bundle-v2.js";
import { computeBundleDigest } from "./payload.js";
import { encodePrefixSection } from "./prefix-section.js";
import { signingKeyFromSeed } from "./sign.js";
import { NOW, pin, SPEAKER, seed, TENANT } from "./signing.test-helper.js";
import { verifyBundle } from "./verify-bundle.js";

const config = (extra: Partial<BundleConfig> = {}): BundleConfig => ({
  tenant_id: TENANT,
  speaker_id: SPEAKER,
  revision_id: 7,
  speaker: { router_id: "192.0.2.1", asn: 65000, policies_json: {} },
  bird: { confirm_after_seconds: 3 },
  communities: [{ id: "c1", community: "65000:100", title: "vpn" }],
  peers: [],
  ...extra,
});

async function issueV2(c: BundleConfig) {
  const key = await signingKeyFromSeed(seed(5));
  const section = encodePrefixSection({ v4: [["11.0.0.0/24", ["65000:100"]]], v6: [["2a00::/32", ["65000:100"]]] });
  const prefixesSha = sha256Hex(section);
  const head = await signBundleHead(
    {
      tenant_id: TENANT,
      speaker_id: SPEAKER,
      revision_id: 7,
      sequence: 12,
      issued_at: new Date(NOW).toISOString(),
      expires_at: new Date(NOW + 86_400_000).toISOString(),
      digest: contentDigestV2(c, prefixesSha),
      prefixes_sha256: prefixesSha,
      section: "full",
      section_sha256: prefixesSha,
      section_size: section.length,
    },
    configBytes(c),
    key,
  );
  return { key, head, section };
}

const options = { speakerId: SPEAKER, tenantId: TENANT, lastSequence: 11, now: NOW };

describe("rl-bundle/1 written from an rl-bundle/2", () => {
  it("carries the same content, sequence and times, and verifies as the release before read it", async () => {
    const { key, head, section } = await issueV2(config());
    const v2 = await verifyBundleV2(Buffer.concat([head, section]), [pin(key)], options);
    const v1 = await bundleV1FromV2(head, section, key, { forceConfirm: true });
    const envelope = JSON.parse(v1.bytes.toString("utf8"));
    expect(envelope).toMatchObject({ format: "rl-bundle/1", alg: "ed25519", key_id: key.keyId });
    const verified = await verifyBundle(new Uint8Array(v1.bytes), [pin(key)], options);
    const { digest, ...content } = verified.payload;
    expect({ ...content, digest: v2.payload.digest }).toEqual(v2.payload);
    expect(digest).toBe(computeBundleDigest(verified.payload));
    expect(v1.digest).toBe(digest);
  });

  it("leaves force_confirm out for an agent that did not announce it, and keeps it for one that did", async () => {
    const { key, head, section } = await issueV2(config({ force_confirm: true }));
    const without = await verifyBundle(new Uint8Array((await bundleV1FromV2(head, section, key, { forceConfirm: false })).bytes), [pin(key)], options);
    expect(without.payload.force_confirm).toBeUndefined();
    const withIt = await verifyBundle(new Uint8Array((await bundleV1FromV2(head, section, key, { forceConfirm: true })).bytes), [pin(key)], options);
    expect(withIt.payload.force_confirm).toBe(true);
  });
});
