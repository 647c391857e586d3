import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  applyChunkedDelta,
  type BundlePayload,
  type BundlePrefixes,
  type ChunkedSection,
  chunkSection,
  columnOf,
  decodePrefixSection,
  diffPrefixLines,
  encodePrefixSection,
  pagesOf,
  prefixLines,
  SectionTags,
  sha256Hex,
  splitSection,
  tagSection,
} from "../../bundle/index.js";
import { type FileText, textData } from "../atomic-file.js";
import { allRoutesBlank } from "../change.js";
import { type RenderedConfig, renderBirdConfig, type SectionInput, SectionStaticsCache } from "./render.js";

// The agent renders its route files from the section's bytes, and after a delta only the community
// sets the delta touched. Whatever came before, the files must be byte for byte what the render of
// the payload's prefixes gives, and a check text may blank only routes the file it replaces has.

const v4 = fc.nat(60).map((n) => `10.${n >> 4}.${n & 15}.0/24`);
const v6 = fc.nat(60).map((n) => `2001:db8:${n.toString(16)}::/48`);
const communities = fc.constantFrom<string[]>(["65000:1"], ["65000:2"], ["65000:2", "65000:1"], ["65000:1", "65000:2"], ["65000:0:7"], []);
// Now and then what the byte render does not take as it is: another spelling (the payload's render
// writes it otherwise), a prefix BIRD refuses, a community that is none. Both must end alike.
const odd = fc.constantFrom("10.0.0.1/24", "010.1.0.0/16", "2001:DB8::/32", "not-a-prefix");
const entries = (net: fc.Arbitrary<string>, often: number) =>
  fc.array(
    fc.tuple(
      fc.oneof({ weight: often, arbitrary: net }, { weight: 1, arbitrary: odd }),
      fc.oneof({ weight: often, arbitrary: communities }, { weight: 1, arbitrary: fc.constant(["x:y"]) }),
    ),
    { maxLength: 40 },
  );
const prefixesArb = fc.record({ v4: entries(v4, 40), v6: entries(v6, 40) }) as fc.Arbitrary<BundlePrefixes>;
// For runs of deltas: the odd entry rarer, so most steps render from the last one's files.
const plainer = fc.record({ v4: entries(v4, 400), v6: entries(v6, 400) }) as fc.Arbitrary<BundlePrefixes>;
// Or a chain of revisions each a few edits from the last (a prefix dropped, added, or given
// another set), over enough prefixes, each once and in order as a controller writes them, for
// many pages: most chunks the next section shares with the last, and a set written again copies
// its routes in them from its last file.
const wideNet = (n: number) => (n < 4096 ? `10.${n >> 8}.${n & 255}.0/24` : `2001:db8:${(n - 4096).toString(16)}::/48`);
const plainSets: string[][] = [["65000:1"], ["65000:2"], ["65000:2", "65000:1"], ["65000:1", "65000:2"], ["65000:0:7"], []];
const edit = fc.record({ kind: fc.constantFrom("drop", "add", "tag"), n: fc.nat(5119), set: communities });
const chain = fc
  .tuple(fc.integer({ min: 2, max: 6 }), fc.nat(), fc.array(fc.array(edit, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }))
  .map(([every, seed, steps]) => {
    let r = seed;
    const random = () => (r = (Math.imul(r, 1103515245) + 12345) >>> 0) >>> 8;
    // Net number → its set, for about one net in `every` of 5,120.
    let now = new Map<number, string[]>();
    for (let n = 0; n < 5120; n++) if (random() % every === 0) now.set(n, plainSets[random() % plainSets.length] as string[]);
    const prefixesOf = (nets: Map<number, string[]>): BundlePrefixes => {
      const sorted = [...nets].sort((a, b) => a[0] - b[0]);
      return {
        v4: sorted.filter(([n]) => n < 4096).map(([n, set]) => [wideNet(n), set]),
        v6: sorted.filter(([n]) => n >= 4096).map(([n, set]) => [wideNet(n), set]),
      };
    };
    const revisions = [prefixesOf(now)];
    for (const edits of steps) {
      now = new Map(now);
      for (const e of edits) {
        if (e.kind === "drop") now.delete(e.n);
        else if (e.kind === "add" || now.has(e.n)) now.set(e.n, e.set);
      }
      revisions.push(prefixesOf(now));
    }
    return revisions;
  });
const settings = fc.record({ kind: fc.constantFrom("blackhole", "unreachable"), titled: fc.boolean() });

const options = { statics: "split" as const, includeName: "rl-routes.conf" };

function payloadOf(section: Buffer, s: { kind: string; titled: boolean }): BundlePayload {
  return {
    tenant_id: "00000000-0000-7000-8000-000000000001",
    speaker_id: "00000000-0000-7000-8000-0000000000aa",
    revision_id: 1,
    sequence: 1,
    digest: "sha256:00",
    speaker: { router_id: "127.0.0.1", asn: 65000 },
    bird: { static_route_kind: s.kind },
    communities: s.titled ? [{ community: "65000:1", title: "blackhole ✓" }] : [],
    peers: [],
    prefixes: decodePrefixSection(section),
  } as BundlePayload;
}

/** A file's text as a string (a route file's bytes made again when the render no longer holds them). */
function textOf(text: FileText): string {
  const data = textData(text);
  if (data === null) throw new Error("a file of the latest render can no longer be made");
  return typeof data === "string" ? data : data.toString("utf8");
}

function outcome(render: () => RenderedConfig): { files: Record<string, string> } | { refused: string } {
  try {
    const { files } = render();
    return { files: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, textOf(v)])) };
  } catch (error) {
    return { refused: (error as Error).message };
  }
}

const sectionOf = (p: BundlePrefixes) => encodePrefixSection(p);
const linesOf = (p: BundlePrefixes) => prefixLines(columnOf(p.v4), columnOf(p.v6));

/** Each line of `check` is the file's line, or empty where the file has a route `against` has. */
function expectSafeCheck(file: Buffer, check: Buffer, against: Buffer): void {
  const lines = file.toString("utf8").split("\n");
  const checked = check.toString("utf8").split("\n");
  const running = new Set(against.toString("utf8").split("\n"));
  expect(checked.length).toBe(lines.length);
  lines.forEach((line, i) => {
    if (checked[i] === line) return;
    expect(checked[i]).toBe("");
    expect(line.startsWith("  route ")).toBe(true);
    expect(running.has(line)).toBe(true);
  });
}

/** A section's bytes as the agent holds them: chunks of about `lines` lines (a few, so that a set's lines cross chunks). */
const chunked = (bytes: Buffer, tags: SectionTags, lines?: number): ChunkedSection => chunkSection(tagSection(bytes, tags), pagesOf(bytes), lines);

/** What the runs of deltas below saw: check texts made, last files read back, renders after a delta that kept chunks of the last section. */
const seen = { checked: 0, copied: 0, shared: 0 };

/**
 * Renders `revisions` one after another, each from the last one's section and files as the agent
 * does: each render the same files as the whole render of that revision, held or made again;
 * unchanged sets keep their text object; check texts blank only what runs. The last files are
 * read back as the agent's WrittenFiles does (the bytes written, asked with the text they were
 * written with), `reads[step]` saying now and then not at all, or a file of another length.
 */
function renderRun(revisions: BundlePrefixes[], s: { kind: string; titled: boolean }, skips: boolean[], lines: number, reads: string[]): void {
  const tags = new SectionTags();
  let step = 0;
  const cache = new SectionStaticsCache((name, text) => {
    const bytes = last?.files[name] === text ? lastBytes.get(name) : undefined;
    const read = reads[step] ?? "file";
    if (bytes === undefined || read === "none") return null;
    seen.copied++;
    return Buffer.from(read === "longer" ? `# x\n${bytes}` : bytes, "utf8");
  });
  let bytes = sectionOf(revisions[0] as BundlePrefixes);
  let base = chunked(bytes, tags, lines);
  let baseSha = sha256Hex(bytes);
  let last: RenderedConfig | null = null;
  // The bytes of the last render's files, as written then.
  let lastBytes = new Map<string, string>();
  const first = outcome(
    () => (last = renderBirdConfig(payloadOf(bytes, s), options, undefined, { input: { section: base, sha256: baseSha, delta: null }, cache })),
  );
  expect(first).toEqual(outcome(() => renderBirdConfig(payloadOf(bytes, s), options)));
  if ("refused" in first) last = null;
  else lastBytes = new Map(Object.entries(first.files));
  revisions.slice(1).forEach((next, at) => {
    step = at;
    const delta = diffPrefixLines(splitSection(bytes), linesOf(next));
    const nextBytes = sectionOf(next);
    const change = applyChunkedDelta(base, delta, { sha256: sha256Hex(nextBytes) }, lines);
    const kept = new Set(base.chunks);
    if (!skips[step] && change.section.chunks.some((c) => kept.has(c))) seen.shared++;
    // Now and then the cache has seen another section (a reverted apply): a whole render then.
    if (skips[step]) cache.sha256 = "elsewhere";
    const input: SectionInput = { section: change.section, sha256: sha256Hex(nextBytes), delta: { ...change, baseSha256: baseSha } };
    let rendered: RenderedConfig | null = null;
    const got = outcome(() => (rendered = renderBirdConfig(payloadOf(nextBytes, s), options, undefined, { input, cache })));
    const whole = outcome(() => renderBirdConfig(payloadOf(nextBytes, s), options));
    expect(got).toEqual(whole);
    const now = rendered as RenderedConfig | null;
    if (now && last && !skips[step]) {
      const before = last;
      for (const [name, text] of Object.entries(now.files)) {
        if (typeof text === "string") continue;
        const was = before.files[name];
        const check = now.checks?.[name];
        if (check) {
          seen.checked++;
          expect(check.against).toBe(was);
          expectSafeCheck(Buffer.from(textOf(text)), check.text, Buffer.from(lastBytes.get(name) as string));
        } else if (was !== undefined && typeof was !== "string" && was !== text) {
          // A set written again without a check text is checked whole: only a set new to the cache.
          expect(textOf(text)).not.toBe(lastBytes.get(name));
        }
        // A file the last render wrote and this one did not: the same object, its bytes made again from this section.
        if (was === text) expect(textOf(text)).toBe(lastBytes.get(name));
        // One this render wrote again: the last one's text is made no more (nothing holds what made it).
        else if (was !== undefined && typeof was !== "string") expect(textData(was)).toBeNull();
      }
    }
    // What `bird -p` reads of each route file once it runs: from the file's frame, as from its bytes.
    if (now)
      for (const text of Object.values(now.files)) if (typeof text !== "string") expect(allRoutesBlank(text)).toBe(allRoutesBlank(textData(text) as Buffer));
    // Written: the bytes let go, and made again (from the section) when asked.
    cache.settle();
    if (now && "files" in whole) for (const [name, text] of Object.entries(now.files)) expect(textOf(text)).toBe(whole.files[name]);
    last = now;
    lastBytes = "files" in got ? new Map(Object.entries(got.files)) : new Map();
    bytes = nextBytes;
    base = change.section;
    baseSha = input.sha256;
  });
}

const runArgs = [
  settings,
  fc.array(fc.boolean(), { maxLength: 6 }),
  fc.integer({ min: 1, max: 20 }),
  fc.array(fc.constantFrom("file", "file", "none", "longer"), { maxLength: 6 }),
] as const;

describe("the route files rendered from a section", () => {
  it("a whole section: the same files, or the same refusal, as the render of its prefixes", () => {
    fc.assert(
      fc.property(prefixesArb, settings, fc.integer({ min: 1, max: 200 }), (prefixes, s, lines) => {
        const section = sectionOf(prefixes);
        const tags = new SectionTags();
        const input: SectionInput = { section: chunked(section, tags, lines), sha256: sha256Hex(section), delta: null };
        const payload = payloadOf(section, s);
        const fromSection = outcome(() => renderBirdConfig(payload, options, undefined, { input, cache: new SectionStaticsCache() }));
        expect(fromSection).toEqual(outcome(() => renderBirdConfig(payloadOf(section, s), options)));
      }),
      { numRuns: 300 },
    );
  });

  it("a run of deltas: each render the same files as the whole render of that revision, held or made again; unchanged sets keep their text object; checks blank only what runs", () => {
    seen.checked = seen.copied = 0;
    fc.assert(fc.property(fc.array(plainer, { minLength: 2, maxLength: 6 }), ...runArgs, renderRun), { numRuns: 200 });
    // The runs did render from the last files (a check text is only made then), not only whole.
    expect(seen.checked).toBeGreaterThan(100);
  });

  it("a chain of small deltas: the sets written again copy their kept routes from the last files read back, the same bytes as a whole render", () => {
    seen.checked = seen.copied = seen.shared = 0;
    fc.assert(fc.property(chain, ...runArgs, renderRun), { numRuns: 60 });
    expect(seen.checked).toBeGreaterThan(60);
    expect(seen.copied).toBeGreaterThan(60);
    expect(seen.shared).toBeGreaterThan(40);
  });

  it("a delta that touches one set of three writes that set's file again and hands back the other two as they were", () => {
    const a: BundlePrefixes = {
      v4: [
        ["10.0.0.0/24", ["65000:1"]],
        ["10.0.1.0/24", ["65000:2"]],
        ["10.0.2.0/24", ["65000:3"]],
      ],
      v6: [],
    };
    const b: BundlePrefixes = { v4: [...a.v4, ["10.0.3.0/24", ["65000:2"]]], v6: [] };
    const tags = new SectionTags();
    const cache = new SectionStaticsCache();
    const s = { kind: "blackhole", titled: false };
    const section = chunked(sectionOf(a), tags);
    const sha = sha256Hex(sectionOf(a));
    const before = renderBirdConfig(payloadOf(sectionOf(a), s), options, undefined, { input: { section, sha256: sha, delta: null }, cache });
    const change = applyChunkedDelta(section, diffPrefixLines(linesOf(a), linesOf(b)), { sha256: sha256Hex(sectionOf(b)) });
    const after = renderBirdConfig(payloadOf(sectionOf(b), s), options, undefined, {
      input: { section: change.section, sha256: sha256Hex(sectionOf(b)), delta: { ...change, baseSha256: sha } },
      cache,
    });
    const routeFiles = Object.keys(after.files).filter((n) => n !== "rl-routes.conf");
    const kept = routeFiles.filter((n) => after.files[n] === before.files[n]);
    expect(routeFiles).toHaveLength(3);
    expect(kept).toHaveLength(2);
    const changed = routeFiles.find((n) => !kept.includes(n)) as string;
    expect(after.checks?.[changed]?.text.toString()).toMatch(/^# 2 IPv4 prefixes with 65000:2\n.*\n.*\n\n {2}route 10\.0\.3\.0\/24 blackhole;\n}\n$/);
    expect(after.checks?.[changed]?.against).toBe(before.files[changed]);
    // The cache holds no file's bytes once they are written: each is made again from the section.
    cache.settle();
    expect(textOf(after.files[changed] as FileText)).toMatch(/route 10\.0\.1\.0\/24 blackhole;\n {2}route 10\.0\.3\.0\/24 blackhole;\n}\n$/);
    expect(textData(before.files[changed] as FileText)).toBeNull();
  });
});
