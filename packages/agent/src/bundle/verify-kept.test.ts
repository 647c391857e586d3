import {
  type BundleContent,
  type BundlePrefix,
  type ChunkedSection,
  chunkedBytes,
  encodePrefixSection,
  pagesOf,
  receiveBundle,
  SectionTags,
  type SigningKeyPair,
  verifyBundle,
} from "@rlc/shared/bundle";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { fixtureContent, SPEAKER_ID, storedKey, TENANT_ID, testKey } from "../../../../test/helpers/agent-fakes.js";
import { issueBundleV2 } from "../../../../test/helpers/bundle-v2.js";
import { tallyOf } from "../probation/rules.js";
import { applyKeptDelta, keepSection, tallyOfKept } from "./kept-prefixes.js";
import { verifyKept } from "./verify-kept.js";

// A delta applied to the prefixes kept in memory must give what verifyBundle gives from the base
// section, and refuse what it refuses, with the same code.

let key: SigningKeyPair;
beforeAll(async () => {
  key = await testKey();
});
const options = { speakerId: SPEAKER_ID, tenantId: TENANT_ID, lastSequence: 1, now: Date.now() };

const v4 = fc.nat(60).map((n): string => `10.${n >> 4}.${n & 15}.0/24`);
const v6 = fc.nat(20).map((n): string => `2001:db8:${n.toString(16)}::/48`);
const tags = fc.constantFrom(["65000:1"], ["65000:2"], ["65000:1", "65000:3"], []);
const unique = (net: fc.Arbitrary<string>) =>
  fc.uniqueArray(fc.tuple(net, tags), { selector: (e) => e[0], maxLength: 25 }).map((l) => l.sort((a, b) => (a[0] < b[0] ? -1 : 1)) as BundlePrefix[]);
const prefixes = fc.record({ v4: unique(v4), v6: unique(v6) });

function content(revision: number, p: BundleContent["prefixes"]): BundleContent {
  return { ...fixtureContent(), revision_id: revision, prefixes: p };
}

async function outcome(run: () => Promise<{ payload: unknown; prefixSection?: Uint8Array }>): Promise<unknown> {
  try {
    const v = await run();
    return { payload: v.payload, section: Buffer.from(v.prefixSection ?? []).toString("utf8") };
  } catch (error) {
    return { refused: (error as { code?: string }).code };
  }
}

describe("verifyKept", () => {
  it("gives verifyBundle's payload and section for any delta, and its refusals (tampered, wrong base)", async () => {
    await fc.assert(
      fc.asyncProperty(
        prefixes,
        prefixes,
        prefixes,
        fc.constantFrom("right", "tamper", "other-script"),
        fc.boolean(),
        fc.constantFrom(undefined, "right", "wrong"),
        fc.boolean(),
        async (a, b, c, how, used, pages, basePages) => {
          const base = content(1, a);
          const next = content(2, b);
          const issued = await issueBundleV2(next, {
            sequence: 2,
            key,
            base,
            tamper: how === "tamper",
            ...(how === "other-script" ? { deltaFrom: content(1, c) } : {}),
            ...(pages ? { pages } : {}),
          });
          const section = encodePrefixSection(a);
          const keys = [storedKey(key)];
          // The agent's numbering of community sets, fresh or after other sections (c's) were read with it.
          const tags = new SectionTags();
          if (used) keepSection(0, encodePrefixSection(c), tags);
          // The base's page digests known (kept from a full bundle that signed them) or made when needed (read from disk).
          const kept = keepSection(1, section, tags, basePages ? pagesOf(section) : null);
          const ours = await outcome(() => verifyKept(receiveBundle(issued.bytes), keys, options, kept, tags));
          expect(ours).toEqual(await outcome(() => verifyBundle(issued.bytes, keys, { ...options, base: { revision_id: 1, section } })));
        },
      ),
      { numRuns: 150 },
    );
  });

  it("refuses with delta_base_mismatch a delta whose base is not the one kept", async () => {
    const a = { v4: [["10.0.0.0/24", ["65000:1"]]] as BundlePrefix[], v6: [] };
    const issued = await issueBundleV2(content(2, { v4: [], v6: [] }), { sequence: 2, key, base: content(1, a) });
    const tags = new SectionTags();
    const kept = keepSection(7, encodePrefixSection(a), tags);
    await expect(verifyKept(receiveBundle(issued.bytes), [storedKey(key)], options, kept, tags)).rejects.toMatchObject({ code: "delta_base_mismatch" });
  });

  it("rebuilds the columns with the section: a delta on a delta gives the section it signs, and says which sets it touched", () => {
    const tags = new SectionTags();
    const a = {
      v4: [
        ["10.0.0.0/24", ["65000:1"]],
        ["10.0.1.0/24", []],
      ] as BundlePrefix[],
      v6: [["2001:db8::/48", ["65000:2"]]] as BundlePrefix[],
    };
    const kept = keepSection(1, encodePrefixSection(a), tags);
    if (!kept) throw new Error("not kept");
    const b = encodePrefixSection({ v4: [["10.0.1.0/24", []]], v6: a.v6 });
    const script = Buffer.from("rl-prefix-delta/1\n-1\n=2\n+2001:db8:1::/48\t65000:2\n");
    const sha = (x: Buffer) => keepSection(0, x, new SectionTags())?.sha256 as string;
    const once = applyKeptDelta(kept, Buffer.from("rl-prefix-delta/1\n-1\n=2\n"), { revisionId: 2, sha256: sha(b) });
    const c = encodePrefixSection({ v4: [["10.0.1.0/24", []]], v6: [...a.v6, ["2001:db8:1::/48", ["65000:2"]]] });
    const twice = applyKeptDelta(once.kept, Buffer.from("rl-prefix-delta/1\n=2\n+2001:db8:1::/48\t65000:2\n"), {
      revisionId: 3,
      sha256: sha(c),
      pagesRoot: pagesOf(c).root,
    });
    expect(chunkedBytes(twice.kept.section).toString()).toBe(c.toString());
    const whole = keepSection(3, c, tags)?.section;
    // Line by line, the columns of the section read whole: prefix and community set.
    const lines = (section: ChunkedSection | undefined) =>
      (section?.chunks ?? []).flatMap((k) =>
        [...k.tagOf].map((tag, j) => `${k.bytes.toString("latin1", k.starts[j]!, k.starts[j]! + k.prefixLength[j]!)} ${tag}`),
      );
    expect(lines(twice.kept.section)).toEqual(lines(whole));
    // The first dropped 10.0.0.0/24 (65000:1); the second added an IPv6 prefix with 65000:2.
    expect([...once.delta.changedTags].map((t) => [tags.texts[t], tags.v6[t]])).toEqual([["65000:1", 0]]);
    expect([...twice.delta.changedTags].map((t) => [tags.texts[t], tags.v6[t]])).toEqual([["65000:2", 1]]);
    expect([...twice.delta.added]).toEqual([2]);
    expect(twice.kept.section.root).toBe(pagesOf(c).root);
    expect(() => applyKeptDelta(once.kept, script, { revisionId: 3, sha256: sha(c) })).toThrow(/does not fit/);
  });
});

describe("tallyOfKept", () => {
  it("counts the prefixes of each family and community set as the payload's tally does", () => {
    fc.assert(
      fc.property(prefixes, (p) => {
        const kept = keepSection(1, encodePrefixSection(p), new SectionTags());
        const sum = (tally: readonly { v6: boolean; communities: readonly string[]; count: number }[]) => {
          const by = new Map<string, number>();
          for (const t of tally) by.set(`${t.v6} ${t.communities.join(",")}`, (by.get(`${t.v6} ${t.communities.join(",")}`) ?? 0) + t.count);
          return Object.fromEntries([...by].sort());
        };
        const payload = { prefixes: p } as BundleContent as Parameters<typeof tallyOf>[0];
        expect(sum(tallyOfKept(kept as NonNullable<typeof kept>))).toEqual(sum(tallyOf(payload)));
      }),
    );
  });
});
