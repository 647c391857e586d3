import { describe, expect, it } from "vitest";
import { type BundleConfig, configBytes, contentDigestV2, sha256Hex, signBundleHead, verifyBundleV2 } from "./bundle-v2.js";
import type { BundlePrefix, BundlePrefixes } from "./payload.js";
import { diffPrefixLines } from "./prefix-delta.js";
import { columnOf, decodePrefixSection, encodePrefixSection, prefixLines } from "./prefix-section.js";
import { signingKeyFromSeed, verifyBundle } from "./sign.js";
import { NOW, pin, refusal, SPEAKER, seed, TENANT } from "./signing.test-helper.js";

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

async function issue(revisionId: number, prefixes: BundlePrefixes, o: { sequence: number; base?: { revision_id: number; prefixes: BundlePrefixes } }) {
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
