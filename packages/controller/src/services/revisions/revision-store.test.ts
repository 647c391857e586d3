import { gunzipSync, gzipSync } from "node:zlib";
import fc from "fast-check";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { buildRevision } from "./revision-build.js";
import { contentFromEntries, type RevisionContent, type RevisionEntry } from "./revision-content.js";
import { digestOf } from "./revision-digest.js";
import { decodeContent, encodeContent, encodeContentAsync } from "./revision-encoding.js";
import { createRevisionStore } from "./revision-store.js";

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

/** The encoder before it wrote bytes (JSON as strings, each piece's string gzip'd): the model. */
function encodeAsStrings(c: RevisionContent): Buffer {
  function* json(): Generator<string> {
    const head = JSON.stringify({ format: 2, modules: c.modules, tags: c.tags.map((t) => [t.communities, t.modules]) });
    yield `${head.slice(0, -1)},`;
    for (const fam of ["v4", "v6"] as const) {
      const { tags } = c[fam];
      const prefixes = c[fam].texts();
      yield `"${fam}":{"prefixes":"`;
      for (let i = 0; i < prefixes.length; i += 50_000) yield `${i ? " " : ""}${JSON.stringify(prefixes.slice(i, i + 50_000).join(" ")).slice(1, -1)}`;
      yield `","tags":[`;
      for (let i = 0; i < tags.length; i += 200_000) yield `${i ? "," : ""}${tags.subarray(i, i + 200_000).join(",")}`;
      yield fam === "v4" ? "]}," : "]}}";
    }
  }
  const members: Buffer[] = [];
  let piece = "";
  for (const text of json()) {
    piece += text;
    if (piece.length >= 1 << 20) {
      members.push(gzipSync(piece, { level: 1 }));
      piece = "";
    }
  }
  if (piece || !members.length) members.push(gzipSync(piece, { level: 1 }));
  return Buffer.concat(members);
}

describe("stored revision content", () => {
  it("is the bytes the string encoder wrote, escapes and non-ASCII text included", () => {
    // Texts a hand-built content may hold (tests, callers): quotes, backslashes, controls, UTF-16.
    const text = fc.oneof(
      fc.constantFrom("10.0.0.0/8", "2001:db8::/32", 'a"b', "c\\d", "e\nf", "\u00e9", "\u{1f600}", "", " "),
      fc.string({ maxLength: 6 }),
      fc.string({ unit: "binary", maxLength: 4 }),
    );
    const entry = fc.tuple(
      text,
      fc.array(fc.constantFrom("65000:1", "65000:\u00e9", 'x"y'), { maxLength: 2 }),
      fc.array(fc.constantFrom("m1", "m2", "m\u00fc"), { minLength: 1, maxLength: 2 }),
    );
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 40 }), fc.array(entry, { maxLength: 10 }), (v4, v6) => {
        const content = contentFromEntries(v4 as RevisionEntry[], v6 as RevisionEntry[]);
        expect(encodeContent(content).equals(encodeAsStrings(content))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("is the bytes the string encoder wrote on a content of many pieces and tags", () => {
    const plain = entries(260_000);
    // Tags past one digit, and a prefix that needs escaping in one slice only.
    plain.v4.forEach((e, i) => {
      e[1] = [`65000:${i % 37}`];
    });
    plain.v4[120_000]![0] = 'odd"text';
    const content = contentFromEntries(plain.v4, plain.v6);
    expect(content.tags.length).toBeGreaterThan(10);
    expect(encodeContent(content).equals(encodeAsStrings(content))).toBe(true);
  });

  it("is the same bytes when made beside the event loop (the rewrite after a commit), which goes on meanwhile", async () => {
    const plain = entries(260_000);
    const content = contentFromEntries(plain.v4, plain.v6);
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    try {
      const bytes = await encodeContentAsync(content);
      expect(bytes.equals(encodeContent(content))).toBe(true);
      expect(members(bytes).length).toBeGreaterThan(2);
      // The loop ran between the pieces: timers fired while the encode was under way.
      expect(turns).toBeGreaterThan(0);
    } finally {
      clearInterval(ticking);
    }
  });

  it("is compressed a piece of about 1 MiB of its text at a time, and reads back the same", () => {
    const plain = entries(300_000);
    const content = contentFromEntries(plain.v4, plain.v6);
    const bytes = encodeContent(content);
    const parts = members(bytes).map((m) => gunzipSync(m).toString("utf8"));
    expect(parts.join("")).toBe(gunzipSync(bytes).toString("utf8"));
    expect(parts.length).toBeGreaterThan(4);
    for (const text of parts) expect(text.length).toBeLessThan(2 * 2 ** 20);
    const back = decodeContent(bytes);
    expect(back.v4.texts()).toEqual(content.v4.texts());
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

  it("is kept in memory without a string a prefix: a built content once the store remembers it, a decoded one as stored, answering as before", async () => {
    const built = buildRevision([
      { module_id: "m-a", name: "a", community: "65000:1", prefixes: ["8.8.8.0/25", "9.9.9.0/24", "2a00:1450::/32"] },
      { module_id: "m-b", name: "b", community: "65000:2", prefixes: ["8.8.8.128/25", "1.1.1.0/24"] },
    ]).content;
    const tuples = [...built.v4.map((e) => e), ...built.v6.map((e) => e)];
    expect(built.v4.length).toBe(4);
    expect(built.v4.hasTexts).toBe(true);
    const store = createRevisionStore();
    store.remember("t", 1, built);
    const kept = (await store.content(null as never, "t", 1))!;
    expect(kept.v4.hasTexts || kept.v6.hasTexts).toBe(false);
    expect([...kept.v4.map((e) => e), ...kept.v6.map((e) => e)]).toEqual(tuples);
    const decoded = decodeContent(encodeContent(built));
    expect(decoded.v4.hasTexts || decoded.v6.hasTexts).toBe(false);
    expect([...decoded.v4.map((e) => e), ...decoded.v6.map((e) => e)]).toEqual(tuples);
    expect(decoded.v6.table?.count).toBe(1);
  });
});

describe("a revision's rewrite after its commit (compactLater)", () => {
  it("that fails is told to onRewriteError, with the revision, and answers false", async () => {
    const told: { err: unknown; revision: { tenantId: string; revisionId: number } }[] = [];
    const store = createRevisionStore({ onRewriteError: (err, revision) => told.push({ err, revision }) });
    // A client whose connections are gone by the time the rewrite runs (a database restarted,
    // a pool closed): the real client's own error, no server needed.
    const gone = postgres("postgres://nobody@127.0.0.1:1/none", { max: 1, onnotice: () => {} });
    await gone.end();
    await expect(store.compactLater(gone, "tenant-a", 7, 6, 0)).resolves.toBe(false);
    expect(told).toHaveLength(1);
    expect(told[0]!.revision).toEqual({ tenantId: "tenant-a", revisionId: 7 });
    expect(String(told[0]!.err)).toMatch(/CONNECTION_ENDED|ended/i);
  });
});
