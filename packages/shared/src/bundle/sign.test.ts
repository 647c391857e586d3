import { describe, expect, it } from "vitest";
import { canonicalJson } from "./canonical-json.js";
import { type BundleContent, type BundlePayload, buildBundlePayload, computeBundleDigest } from "./payload.js";
import { keyIdOf, type SignedBundle, signBundle, signingKeyFromSeed } from "./sign.js";
import { NOW, pin, refusal, SPEAKER, seed, TENANT } from "./signing.test-helper.js";
import { verifyBundle } from "./verify-bundle.js";

const content: BundleContent = {
  tenant_id: TENANT,
  speaker_id: SPEAKER,
  revision_id: 42,
  speaker: { router_id: "192.0.2.1", asn: 65000, policies_json: { local_ip: "127.0.0.1" } },
  bird: { next_hop_ipv4: "198.51.100.254", static_route_kind: "blackhole" },
  communities: [{ id: "c1", community: "65000:100", title: "via-vpn" }],
  peers: [],
  prefixes: { v4: [["198.51.100.0/24", ["65000:100"]]], v6: [["2001:db8::/32", []]] },
};

async function setup(overrides: Partial<BundlePayload> = {}) {
  const key = await signingKeyFromSeed(seed(7));
  const payload = { ...buildBundlePayload(content, { sequence: 5, issuedAt: new Date(NOW - 1000) }), ...overrides };
  const pinned = [pin(key)];
  const envelope = await signBundle(payload, key.secretKey, key.keyId);
  return { key, payload, pinned, envelope };
}

const opts = { speakerId: SPEAKER, tenantId: TENANT, lastSequence: 4, now: NOW };

describe("signing keys", () => {
  it("derives the same pair from the same seed and names it by its public key", async () => {
    const a = await signingKeyFromSeed(seed(1));
    const b = await signingKeyFromSeed(seed(1));
    expect(a.publicKey).toEqual(b.publicKey);
    expect(a.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(a.keyId).toBe(keyIdOf(a.publicKey));
    expect(a.secretKey).toHaveLength(64);
  });
});

describe("signBundle / verifyBundle", () => {
  it("round trip - the envelope as object, string and bytes gives back the payload", async () => {
    const { payload, pinned, envelope } = await setup();
    expect(envelope).toMatchObject({ format: "rl-bundle/1", alg: "ed25519", key_id: pinned[0]?.key_id });
    expect(Buffer.from(envelope.payload, "base64").toString("utf8")).toBe(canonicalJson(payload));
    for (const input of [envelope, JSON.stringify(envelope), new TextEncoder().encode(JSON.stringify(envelope))]) {
      const verified = await verifyBundle(input, pinned, opts);
      expect(verified.payload).toEqual(payload);
      expect(verified.keyId).toBe(pinned[0]?.key_id);
    }
  });

  it("accepts the first bundle when nothing was applied yet", async () => {
    const { pinned, envelope } = await setup();
    await expect(verifyBundle(envelope, pinned, { ...opts, lastSequence: null })).resolves.toBeDefined();
  });

  it("refuses a payload changed after signing - bad_signature", async () => {
    const { payload, pinned, envelope } = await setup();
    const forged = Buffer.from(canonicalJson({ ...payload, revision_id: 43 })).toString("base64");
    expect(await refusal(verifyBundle({ ...envelope, payload: forged }, pinned, opts))).toBe("bad_signature");
  });

  it("refuses a signature by another key under a pinned key id - bad_signature", async () => {
    const { payload, pinned } = await setup();
    const other = await signingKeyFromSeed(seed(9));
    const envelope = await signBundle(payload, other.secretKey, pinned[0]?.key_id ?? "");
    expect(await refusal(verifyBundle(envelope, pinned, opts))).toBe("bad_signature");
  });

  it("never parses unsigned bytes - garbage under a bad signature is bad_signature, not malformed", async () => {
    const { pinned, envelope } = await setup();
    const garbage = Buffer.from("{not json").toString("base64");
    expect(await refusal(verifyBundle({ ...envelope, payload: garbage }, pinned, opts))).toBe("bad_signature");
  });

  it("refuses a key that is not pinned - unknown_key", async () => {
    const { payload } = await setup();
    const other = await signingKeyFromSeed(seed(9));
    const envelope = await signBundle(payload, other.secretKey, other.keyId);
    const { pinned } = await setup();
    expect(await refusal(verifyBundle(envelope, pinned, opts))).toBe("unknown_key");
  });

  it("refuses a key that was retired - retired_key", async () => {
    const { pinned, envelope } = await setup();
    const retired = pinned.map((k) => ({ ...k, status: "retired" as const }));
    expect(await refusal(verifyBundle(envelope, retired, opts))).toBe("retired_key");
  });

  it("refuses another speaker's bundle - wrong_speaker", async () => {
    const { pinned, envelope } = await setup();
    expect(await refusal(verifyBundle(envelope, pinned, { ...opts, speakerId: "someone-else" }))).toBe("wrong_speaker");
  });

  it("refuses another tenant's bundle - wrong_tenant", async () => {
    const { pinned, envelope } = await setup();
    expect(await refusal(verifyBundle(envelope, pinned, { ...opts, tenantId: "other" }))).toBe("wrong_tenant");
  });

  it("refuses a sequence not above the last applied one - stale_sequence", async () => {
    const { pinned, envelope } = await setup();
    expect(await refusal(verifyBundle(envelope, pinned, { ...opts, lastSequence: 5 }))).toBe("stale_sequence");
    expect(await refusal(verifyBundle(envelope, pinned, { ...opts, lastSequence: 6 }))).toBe("stale_sequence");
  });

  it("refuses an expired bundle - expired", async () => {
    const { payload, pinned, envelope } = await setup();
    const at = Date.parse(payload.expires_at);
    expect(await refusal(verifyBundle(envelope, pinned, { ...opts, now: new Date(at) }))).toBe("expired");
    await expect(verifyBundle(envelope, pinned, { ...opts, now: at - 1 })).resolves.toBeDefined();
  });

  it("refuses a signed payload whose digest does not match its content - digest_mismatch", async () => {
    const { pinned, envelope } = await setup({ prefixes: { v4: [], v6: [] } });
    expect(await refusal(verifyBundle(envelope, pinned, opts))).toBe("digest_mismatch");
  });

  it("refuses a bundle over the cap before parsing it - too_large", async () => {
    const { pinned, envelope } = await setup();
    const text = JSON.stringify(envelope);
    expect(await refusal(verifyBundle(text, pinned, { ...opts, maxBytes: text.length - 1 }))).toBe("too_large");
    expect(await refusal(verifyBundle(`${"x".repeat(100)}`, pinned, { ...opts, maxBytes: 10 }))).toBe("too_large");
    expect(await refusal(verifyBundle(envelope, pinned, { ...opts, maxBytes: 100 }))).toBe("too_large");
  });

  it("refuses envelopes that are not JSON, lack fields or name another format", async () => {
    const { pinned, envelope } = await setup();
    expect(await refusal(verifyBundle("{", pinned, opts))).toBe("malformed");
    expect(await refusal(verifyBundle({ ...envelope, signature: undefined } as unknown as SignedBundle, pinned, opts))).toBe("malformed");
    expect(await refusal(verifyBundle({ ...envelope, payload: "a b" }, pinned, opts))).toBe("malformed");
    expect(await refusal(verifyBundle({ ...envelope, format: "rl-bundle/2" } as unknown as SignedBundle, pinned, opts))).toBe("unsupported_format");
  });

  it("refuses a validly signed payload that is not a bundle - malformed", async () => {
    const { key, pinned } = await setup();
    const envelope = await signBundle({ hello: 1 } as unknown as BundlePayload, key.secretKey, key.keyId);
    expect(await refusal(verifyBundle(envelope, pinned, opts))).toBe("malformed");
  });
});

describe("computeBundleDigest", () => {
  it("covers the content but not the issue fields, so a re-issue keeps its digest", () => {
    const a = buildBundlePayload(content, { sequence: 1, issuedAt: new Date(NOW) });
    const b = buildBundlePayload(content, { sequence: 2, issuedAt: new Date(NOW + 60_000) });
    expect(a.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(b.digest).toBe(a.digest);
    expect(b.expires_at).toBe("2026-11-29T10:01:00.000Z");
    expect(computeBundleDigest({ ...content, revision_id: 43 })).not.toBe(a.digest);
    expect(computeBundleDigest({ ...a, digest: "x" })).toBe(a.digest);
  });
});
