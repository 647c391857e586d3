import {
  type BundleContent,
  type BundlePrefix,
  decodePrefixSection,
  encodePrefixSection,
  receiveBundle,
  type SigningKeyPair,
  verifyBundle,
} from "@rlc/shared/bundle";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { fixtureContent, SPEAKER_ID, storedKey, TENANT_ID, testKey } from "../../../../test/helpers/agent-fakes.js";
import { issueBundleV2 } from "../../../../test/helpers/bundle-v2.js";
import { applyKeptDelta, keepSection } from "./kept-prefixes.js";
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
      fc.asyncProperty(prefixes, prefixes, prefixes, fc.constantFrom("right", "tamper", "other-script"), fc.boolean(), async (a, b, c, how, lend) => {
        const base = content(1, a);
        const next = content(2, b);
        const issued = await issueBundleV2(next, {
          sequence: 2,
          key,
          base,
          tamper: how === "tamper",
          ...(how === "other-script" ? { deltaFrom: content(1, c) } : {}),
        });
        const section = encodePrefixSection(a);
        const keys = [storedKey(key)];
        // Kept from disk, or after a full bundle with the payload's decoded tuples lent.
        const kept = keepSection(1, section, lend ? decodePrefixSection(section) : undefined);
        const ours = await outcome(() => verifyKept(receiveBundle(issued.bytes), keys, options, kept));
        expect(ours).toEqual(await outcome(() => verifyBundle(issued.bytes, keys, { ...options, base: { revision_id: 1, section } })));
      }),
      { numRuns: 150 },
    );
  });

  it("refuses with delta_base_mismatch a delta whose base is not the one kept", async () => {
    const a = { v4: [["10.0.0.0/24", ["65000:1"]]] as BundlePrefix[], v6: [] };
    const issued = await issueBundleV2(content(2, { v4: [], v6: [] }), { sequence: 2, key, base: content(1, a) });
    const kept = keepSection(7, encodePrefixSection(a));
    await expect(verifyKept(receiveBundle(issued.bytes), [storedKey(key)], options, kept)).rejects.toMatchObject({ code: "delta_base_mismatch" });
  });

  it("rebuilds the line index with the section: a delta on a delta gives the section it signs", () => {
    const a = {
      v4: [
        ["10.0.0.0/24", ["65000:1"]],
        ["10.0.1.0/24", []],
      ] as BundlePrefix[],
      v6: [["2001:db8::/48", ["65000:2"]]] as BundlePrefix[],
    };
    const kept = keepSection(1, encodePrefixSection(a));
    const b = encodePrefixSection({ v4: [["10.0.1.0/24", []]], v6: a.v6 });
    const script = Buffer.from("rl-prefix-delta/1\n-1\n=2\n+2001:db8:1::/48\t65000:2\n");
    const once = applyKeptDelta(kept, 2, Buffer.from("rl-prefix-delta/1\n-1\n=2\n"), keepSection(0, b).sha256);
    const c = encodePrefixSection({ v4: [["10.0.1.0/24", []]], v6: [...a.v6, ["2001:db8:1::/48", ["65000:2"]]] });
    const twice = applyKeptDelta(once, 3, Buffer.from("rl-prefix-delta/1\n=2\n+2001:db8:1::/48\t65000:2\n"), keepSection(0, c).sha256);
    expect(twice.section.toString()).toBe(c.toString());
    expect([...twice.starts]).toEqual([...keepSection(3, c).starts]);
    expect(() => applyKeptDelta(once, 3, script, keepSection(0, c).sha256)).toThrow(/does not fit/);
  });
});
