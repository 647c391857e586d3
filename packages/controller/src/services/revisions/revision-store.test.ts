import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { contentFromEntries, digestOf, type RevisionEntry } from "./revision-content.js";
import { decodeContent, encodeContent } from "./revision-store.js";

// ~300k prefixes in three tags: some 5 MB of stored JSON.
const entries = (n: number): { v4: RevisionEntry[]; v6: RevisionEntry[] } => {
  const v4: RevisionEntry[] = [];
  const v6: RevisionEntry[] = [];
  for (let i = 0; i < n; i++) v4.push([`${11 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`, [`65000:${i % 3}`], [`m${i % 3}`]]);
  for (let i = 0; i < n / 10; i++) v6.push([`2a00:${i.toString(16)}::/48`, ["65000:9"], ["m9"]]);
  return { v4, v6 };
};

/** The stored bytes cut at each gzip member's header (each cut is checked: it must decompress on its own). */
function members(bytes: Buffer): Buffer[] {
  const starts: number[] = [];
  for (let i = bytes.indexOf(0x1f); i !== -1; i = bytes.indexOf(0x1f, i + 1)) if (bytes[i + 1] === 0x8b && bytes[i + 2] === 8) starts.push(i);
  return starts.map((s, k) => bytes.subarray(s, starts[k + 1] ?? bytes.length));
}

describe("stored revision content", () => {
  it("is compressed a piece of about 1 MiB of its text at a time, and reads back the same", () => {
    const plain = entries(300_000);
    const content = contentFromEntries(plain.v4, plain.v6);
    const bytes = encodeContent(content);
    const parts = members(bytes).map((m) => gunzipSync(m).toString("utf8"));
    expect(parts.join("")).toBe(gunzipSync(bytes).toString("utf8"));
    expect(parts.length).toBeGreaterThan(4);
    for (const text of parts) expect(text.length).toBeLessThan(2 * 2 ** 20);
    const back = decodeContent(bytes);
    expect(back.v4.prefixes).toEqual(content.v4.prefixes);
    expect([...back.v6.tags]).toEqual([...content.v6.tags]);
    expect(digestOf(back)).toBe(digestOf(content));
  });

  it("reads a content stored as one gzip member, as revisions were before", () => {
    const plain = entries(20_000);
    const content = contentFromEntries(plain.v4, plain.v6);
    const whole = gzipSync(gunzipSync(encodeContent(content)));
    expect(members(whole)).toHaveLength(1);
    expect(digestOf(decodeContent(whole))).toBe(digestOf(content));
  });
});
