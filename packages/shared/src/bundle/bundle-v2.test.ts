import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type BundleConfig,
  type BundleHeadV2,
  configBytes,
  contentDigestV2,
  sha256Hex,
  signBundleHead,
  splitBundleV2,
  verifyBundleHeadV2,
  verifyBundleV2,
} from "./bundle-v2.js";
import { BundleError } from "./errors.js";
import type { BundlePrefix, BundlePrefixes } from "./payload.js";
import { diffPrefixLines } from "./prefix-delta.js";
import { pagesOf } from "./prefix-pages.js";
import { columnOf, decodePrefixSection, encodePrefixSection, prefixLines } from "./prefix-section.js";
import { BundleReceiver, receiveBundle } from "./receive.js";
import { signBundle, signingKeyFromSeed } from "./sign.js";
import { NOW, pin, refusal, SPEAKER, seed, TENANT } from "./signing.test-helper.js";
import { verifyBundle } from "./verify-bundle.js";

const config = (revision: number): BundleConfig => ({
  tenant_id: TENANT,
  speaker_id: SPEAKER,
  revision_id: revision,
  speaker: { router_id: "192.0.2.1", asn: 65000, policies_json: {} },
  bird: {},
  communities: [{ id: "c1", community: "65000:100", title: "vpn" }],
  peers: [],
});

/** `n` /24s in address order, each with one of two communities. */
function revision(n: number, change: (i: number, p: BundlePrefix) => BundlePrefix | null = (_, p) => p): BundlePrefixes {
  const a = ["65000:100"];
  const b = ["65000:200"];
  const v4: BundlePrefix[] = [];
  for (let i = 0; i < n; i++) {
    const p = change(i, [`${11 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`, i % 3 ? a : b]);
    if (p) v4.push(p);
  }
  return { v4, v6: [["2a00::/32", a]] };
}

async function issue(
  revisionId: number,
  prefixes: BundlePrefixes,
  o: { sequence: number; base?: { revision_id: number; prefixes: BundlePrefixes }; pagesRoot?: (full: Buffer) => string },
) {
  const key = await signingKeyFromSeed(seed(3));
  const pinned = [pin(key)];
  const full = encodePrefixSection(prefixes);
  const prefixesSha = sha256Hex(full);
  const baseFull = o.base ? encodePrefixSection(o.base.prefixes) : null;
  const section = o.base
    ? diffPrefixLines(prefixLines(columnOf(o.base.prefixes.v4), columnOf(o.base.prefixes.v6)), prefixLines(columnOf(prefixes.v4), columnOf(prefixes.v6)))
    : full;
  const c = config(revisionId);
  const head = await signBundleHead(
    {
      tenant_id: TENANT,
      speaker_id: SPEAKER,
      revision_id: revisionId,
      sequence: o.sequence,
      issued_at: new Date(NOW - 1000).toISOString(),
      expires_at: new Date(NOW + 60_000).toISOString(),
      digest: contentDigestV2(c, prefixesSha),
      prefixes_sha256: prefixesSha,
      ...(o.pagesRoot ? { prefixes_pages_sha256: o.pagesRoot(full) } : {}),
      section: o.base ? "delta" : "full",
      section_sha256: sha256Hex(section),
      section_size: section.length,
      ...(o.base && baseFull ? { base_revision_id: o.base.revision_id, base_prefixes_sha256: sha256Hex(baseFull) } : {}),
    },
    configBytes(c),
    key,
  );
  return { bytes: Buffer.concat([head, section]), head, section, full, pinned };
}

const opts = { speakerId: SPEAKER, tenantId: TENANT, lastSequence: 1, now: NOW };

describe("rl-bundle/2", () => {
  it("a full bundle verifies to the prefixes it was issued with, through verifyBundle too", async () => {
    const prefixes = revision(1000);
    const { bytes, pinned, full } = await issue(7, prefixes, { sequence: 2 });
    const verified = await verifyBundle(bytes, pinned, opts);
    expect(verified.payload.prefixes).toEqual(prefixes);
    expect(verified.payload).toMatchObject({ revision_id: 7, sequence: 2, speaker_id: SPEAKER });
    expect(Buffer.from(verified.prefixSection!).equals(full)).toBe(true);
    expect(decodePrefixSection(full)).toEqual(prefixes);
  });

  it("a delta applied to the base the agent holds gives the full bundle's content and digest", async () => {
    const base = revision(2000);
    const next = revision(2000, (i, p) => (i === 5 ? null : i === 9 ? [p[0], ["65000:200"]] : p));
    next.v4.push(["99.0.0.0/24", ["65000:100"]]);
    const whole = await issue(8, next, { sequence: 3 });
    const delta = await issue(8, next, { sequence: 3, base: { revision_id: 7, prefixes: base } });
    const fromDelta = await verifyBundleV2(delta.bytes, delta.pinned, { ...opts, base: { revision_id: 7, section: encodePrefixSection(base) } });
    const fromFull = await verifyBundleV2(whole.bytes, whole.pinned, opts);
    expect(fromDelta.payload).toEqual(fromFull.payload);
    expect(Buffer.from(fromDelta.prefixSection).equals(whole.full)).toBe(true);
    expect(fromDelta.header.section).toBe("delta");
  });

  it("a delta over a missing base or another base is delta_base_mismatch (the agent fetches the full bundle)", async () => {
    const base = revision(300);
    const next = revision(300, (i, p) => (i === 1 ? null : p));
    const delta = await issue(8, next, { sequence: 3, base: { revision_id: 7, prefixes: base } });
    expect(await refusal(verifyBundleV2(delta.bytes, delta.pinned, opts))).toBe("delta_base_mismatch");
    const other = encodePrefixSection(revision(301));
    expect(await refusal(verifyBundleV2(delta.bytes, delta.pinned, { ...opts, base: { revision_id: 7, section: other } }))).toBe("delta_base_mismatch");
    expect(await refusal(verifyBundleV2(delta.bytes, delta.pinned, { ...opts, base: { revision_id: 6, section: encodePrefixSection(base) } }))).toBe(
      "delta_base_mismatch",
    );
  });

  it("a tampered delta or full section is refused as a bad signature", async () => {
    const base = revision(300);
    const next = revision(300, (i, p) => (i === 1 ? null : p));
    const delta = await issue(8, next, { sequence: 3, base: { revision_id: 7, prefixes: base } });
    const tampered = Buffer.from(delta.bytes);
    tampered.write("+", tampered.length - 20);
    const withBase = { ...opts, base: { revision_id: 7, section: encodePrefixSection(base) } };
    expect(await refusal(verifyBundleV2(tampered, delta.pinned, withBase))).toBe("bad_signature");
    const full = await issue(8, next, { sequence: 3 });
    const changed = Buffer.from(full.bytes.toString("latin1").replace("11.0.2.0/24", "11.0.2.0/23"), "latin1");
    expect(await refusal(verifyBundleV2(changed, full.pinned, opts))).toBe("bad_signature");
    const header = Buffer.from(full.bytes);
    header[40] = header[40]! ^ 1;
    expect(await refusal(verifyBundleV2(header, full.pinned, opts))).toBe("bad_signature");
  });

  it("a full bundle whose header names the section's page root verifies, with the pages; a wrong root is refused", async () => {
    const prefixes = revision(3000);
    const right = await issue(7, prefixes, { sequence: 2, pagesRoot: (full) => pagesOf(full).root });
    const verified = await verifyBundle(right.bytes, right.pinned, opts);
    expect(verified.payload.prefixes).toEqual(prefixes);
    expect(verified.prefixPages?.root).toBe(pagesOf(right.full).root);
    expect(verified.prefixPages?.ends.length).toBeGreaterThan(20);
    // The root of another section (one prefix less): signed, so the controller's bug, caught before pages are kept.
    const wrong = await issue(7, prefixes, { sequence: 2, pagesRoot: () => pagesOf(encodePrefixSection(revision(2999))).root });
    expect(await refusal(verifyBundleV2(wrong.bytes, wrong.pinned, opts))).toBe("digest_mismatch");
    // A header without the field (a controller of the release before): no pages, verified as before.
    const without = await issue(7, prefixes, { sequence: 2 });
    expect((await verifyBundle(without.bytes, without.pinned, opts)).prefixPages).toBeUndefined();
    // A delta naming the root verifies through the full SHA-256 as before (the agent's page check is its own).
    const base = revision(3000, (i, p) => (i === 17 ? null : p));
    const delta = await issue(7, prefixes, { sequence: 2, base: { revision_id: 6, prefixes: base }, pagesRoot: (full) => pagesOf(full).root });
    const fromDelta = await verifyBundleV2(delta.bytes, delta.pinned, { ...opts, base: { revision_id: 6, section: encodePrefixSection(base) } });
    expect(fromDelta.header.prefixes_pages_sha256).toBe(pagesOf(right.full).root);
    expect(fromDelta.payload).toEqual((await verifyBundleV2(right.bytes, right.pinned, opts)).payload);
  });

  it("sequence and expiry rules are those of every bundle", async () => {
    const { bytes, pinned } = await issue(7, revision(10), { sequence: 2 });
    expect(await refusal(verifyBundleV2(bytes, pinned, { ...opts, lastSequence: 2 }))).toBe("stale_sequence");
    expect(await refusal(verifyBundleV2(bytes, pinned, { ...opts, now: NOW + 120_000 }))).toBe("expired");
    expect(await refusal(verifyBundleV2(bytes, pinned, { ...opts, speakerId: TENANT }))).toBe("wrong_speaker");
    expect(await refusal(verifyBundleV2(bytes, [], opts))).toBe("unknown_key");
  });

  it("a 1 % change of 100,000 prefixes makes a delta under 1/20 of the full bundle", async () => {
    const base = revision(100_000);
    const next = revision(100_000, (i, p) => (i % 300 === 0 ? null : i % 300 === 1 ? [p[0], ["65000:300"]] : p));
    for (let i = 0; i < 333; i++) next.v4.push([`${200 + (i >> 8)}.${i & 255}.0.0/24`, ["65000:100"]]);
    const full = await issue(8, next, { sequence: 3 });
    const delta = await issue(8, next, { sequence: 3, base: { revision_id: 7, prefixes: base } });
    expect(delta.bytes.length).toBeLessThan(full.bytes.length / 20);
    const verified = await verifyBundleV2(delta.bytes, delta.pinned, { ...opts, base: { revision_id: 7, section: encodePrefixSection(base) } });
    expect(verified.payload.prefixes.v4.length).toBe(next.v4.length);
  });
});

/** `bytes` cut where `cuts` say (offsets, any order, duplicates allowed). */
function chunksOf(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set([0, ...cuts.map((c) => c % (bytes.length + 1)), bytes.length])].sort((a, b) => a - b);
  return at.slice(1).map((end, i) => bytes.subarray(at[i], end));
}

describe("rl-bundle/2 received in chunks", () => {
  it("however the bytes are cut, the receiver hands on the same bytes and the hashes a verifier would take, and the head once", async () => {
    const base = revision(400);
    const next = revision(400, (i, p) => (i % 50 === 0 ? null : p));
    const bundles = [await issue(8, next, { sequence: 3 }), await issue(8, next, { sequence: 3, base: { revision_id: 7, prefixes: base } })];
    const verifyOpts = { ...opts, base: { revision_id: 7, section: encodePrefixSection(base) } };
    const expected = await Promise.all(bundles.map((b) => verifyBundleV2(b.bytes, b.pinned, verifyOpts)));
    await fc.assert(
      fc.asyncProperty(fc.nat(1), fc.array(fc.nat(), { maxLength: 40 }), fc.boolean(), async (which, cuts, announced) => {
        const { bytes, pinned } = bundles[which]!;
        const heads: BundleHeadV2[] = [];
        const receiver = new BundleReceiver({ maxBytes: bytes.length, expectedSize: announced ? bytes.length : undefined, onHead: (h) => heads.push(h) });
        for (const chunk of chunksOf(bytes, cuts)) receiver.push(chunk);
        const received = receiver.finish();
        const parts = splitBundleV2(bytes);
        expect(Buffer.from(received.bytes).equals(bytes)).toBe(true);
        expect(received.sha256).toBe(sha256Hex(bytes));
        expect(received.v2).toMatchObject({ configSha256: sha256Hex(parts.config), sectionSha256: sha256Hex(parts.section) });
        expect(heads.map((h) => Buffer.from(h.header).equals(parts.header) && Buffer.from(h.signature).equals(parts.signature))).toEqual([true]);
        const verified = await verifyBundleV2(received.bytes, pinned, { ...verifyOpts, received });
        expect(verified.payload).toEqual(expected[which]!.payload);
      }),
      { numRuns: 60 },
    );
  });

  it("the hashes taken while receiving serve only the bytes they were taken of: a changed copy is refused", async () => {
    const full = await issue(8, revision(300), { sequence: 3 });
    const received = receiveBundle(full.bytes);
    const changed = Buffer.from(full.bytes.toString("latin1").replace("11.0.2.0/24", "11.0.2.0/23"), "latin1");
    expect(changed.length).toBe(full.bytes.length);
    expect(await refusal(verifyBundleV2(changed, full.pinned, { ...opts, received }))).toBe("bad_signature");
    // And through verifyBundle, which hands the receipt on.
    expect(await refusal(verifyBundle(changed, full.pinned, { ...opts, received }))).toBe("bad_signature");
  });

  it("a forged, misaddressed, stale or expired head is refused with the first chunk, before the rest is taken in", async () => {
    const { bytes, pinned } = await issue(8, revision(2000), { sequence: 3 });
    expect(bytes.length).toBeGreaterThan(10 * 4096);
    const forged = Buffer.from(bytes);
    forged[40] = forged[40]! ^ 1;
    const cases: [Buffer, typeof opts, string][] = [
      [forged, opts, "bad_signature"],
      [bytes, { ...opts, speakerId: TENANT }, "wrong_speaker"],
      [bytes, { ...opts, lastSequence: 3 }, "stale_sequence"],
      [bytes, { ...opts, now: NOW + 120_000 }, "expired"],
    ];
    for (const [data, o, code] of cases) {
      const receiver = new BundleReceiver({ maxBytes: data.length, expectedSize: data.length, onHead: (head) => verifyBundleHeadV2(head, pinned, o) });
      const chunks = chunksOf(
        data,
        Array.from({ length: Math.ceil(data.length / 4096) }, (_, i) => i * 4096),
      );
      let refusedAt = -1;
      for (let i = 0; i < chunks.length && refusedAt < 0; i++) {
        try {
          receiver.push(chunks[i]!);
        } catch (error) {
          expect(error).toBeInstanceOf(BundleError);
          expect((error as BundleError).code).toBe(code);
          refusedAt = i;
        }
      }
      expect(refusedAt).toBe(0);
    }
  });

  it("without an announced size, more than the cap is refused at the chunk that passes it; a signed envelope (rl-bundle/1) passes through unhashed by part", async () => {
    const { bytes } = await issue(8, revision(2000), { sequence: 3 });
    const receiver = new BundleReceiver({ maxBytes: 10_000 });
    receiver.push(bytes.subarray(0, 8000));
    expect(() => receiver.push(bytes.subarray(8000, 12_000))).toThrow(expect.objectContaining({ code: "too_large" }));
    const key = await signingKeyFromSeed(seed(3));
    const v1 = Buffer.from(JSON.stringify(await signBundle({ speaker_id: SPEAKER } as never, key.secretKey, key.keyId)));
    const heads: unknown[] = [];
    const received = receiveBundle(v1, { maxBytes: v1.length, onHead: (h) => heads.push(h) });
    expect(received.v2).toBeNull();
    expect(heads).toEqual([]);
    expect(Buffer.from(received.bytes).equals(v1)).toBe(true);
  });
});
