import { diffPrefixColumns, encodePrefixColumns, type PrefixColumn } from "@rlc/shared/bundle";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildRevision, type ModuleInput } from "../revisions/revision-build.js";
import { compactContent, type RevisionContent, type RevisionFamily } from "../revisions/revision-content.js";
import { decodeContent, encodeContent } from "../revisions/revision-encoding.js";
import { smallV4, smallV6 } from "../revisions/revision-model.test-helper.js";
import { fullSection, sectionDelta } from "./bundle-sections.js";

// A revision's prefix section, and the delta from one revision's section to another's, are the
// bytes the walk over every line's text gives, whether the content carries its texts, only its
// parsed prefixes (kept compact), or its stored text (read back).

const v4 = smallV4;
const v6 = smallV6;
const prefixes = fc.array(fc.oneof({ weight: 2, arbitrary: v4 }, { weight: 1, arbitrary: v6 }), { maxLength: 14 });
const community = fc.option(fc.constantFrom("65000:1", "65000:2", "65000:3"), { nil: null });
const modulesArb = fc
  .array(fc.record({ prefixes, community }), { minLength: 1, maxLength: 4 })
  .map((ms) =>
    ms.map((m, i): ModuleInput => ({ module_id: `00000000-0000-0000-0000-00000000000${i}`, name: `m${i}`, community: m.community, prefixes: m.prefixes })),
  );

const column = (f: RevisionFamily): PrefixColumn => ({ length: f.length, prefixAt: (i) => f.prefixAt(i), communitiesAt: (i) => f.tagAt(i).communities });
const byTexts = (c: RevisionContent) => encodePrefixColumns(column(c.v4), column(c.v6));
/** The three forms of a built content: as built, compact, read back from its stored bytes. */
const forms = (modules: ModuleInput[]): RevisionContent[] => {
  const built = buildRevision(modules).content;
  const compact = compactContent(buildRevision(modules).content);
  return [built, compact, decodeContent(encodeContent(built))];
};

describe("prefix sections of a revision's content", () => {
  it("the full section written from the parsed prefixes is the bytes written from the texts", () => {
    fc.assert(
      fc.property(modulesArb, (modules) => {
        const want = byTexts(buildRevision(modules).content);
        for (const c of forms(modules)) expect(fullSection(c).equals(want)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("the delta walked where the alignment says the two differ is the script of the walk over every line", () => {
    fc.assert(
      fc.property(modulesArb, modulesArb, (a, b) => {
        const base = buildRevision(a).content;
        const next = buildRevision(b).content;
        const want = diffPrefixColumns({ v4: column(base.v4), v6: column(base.v6) }, { v4: column(next.v4), v6: column(next.v6) });
        const [, baseCompact, baseRead] = forms(a);
        const [, nextCompact, nextRead] = forms(b);
        for (const [x, y] of [
          [base, next],
          [baseCompact!, nextCompact!],
          [baseRead!, nextCompact!],
          [baseRead!, nextRead!],
        ] as const) {
          expect(sectionDelta(x, y).equals(want)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
