import { encodePrefixColumns, type PrefixColumn } from "@rlc/shared/bundle";
import type { Sql } from "postgres";
import { describe, expect, it } from "vitest";
import type { BundleSectionMeta } from "../../db/bundle-sections.js";
import { type SectionDeps, settleLater } from "./bundle-sections.js";
import { sectionKey } from "./section-cache.js";
import { columnsOf, columnsSize, createSectionColumnsCache } from "./section-columns.js";

// What follows a revision's commit (settleLater): the body of its full section is written a few
// seconds later, once the apply's agents have fetched their deltas; the room its successor is
// written into must not wait for that, or a refresh in between allocates a section of its own.

const column = (prefixes: string[]): PrefixColumn => ({ length: prefixes.length, prefixAt: (i) => prefixes[i]!, communitiesAt: () => ["65000:1"] });

describe("settleLater", () => {
  it("makes room for the tenant's next full section as the revision commits, long before the body is written", async () => {
    // Past the size that gets room made ahead (4 MiB): 300k IPv4 prefixes.
    const prefixes = Array.from({ length: 300_000 }, (_, i) => `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`);
    const bytes = encodePrefixColumns(column(prefixes), column([]));
    const full = {
      revision_id: 7,
      base_revision_id: 0,
      sha256: "a".repeat(64),
      size: bytes.length,
      chunk: 0,
      made_from: 6,
      made_depth: 1,
    } as BundleSectionMeta;
    const columns = createSectionColumnsCache();
    const kept = columnsOf(bytes);
    // As ensureFullSection leaves a section made from its base's: kept in columns.
    columns.put(sectionKey("t", full), kept, columnsSize(bytes.length, kept.section.count));
    const deps = { columns, sql: {} as Sql, bodyDelayMs: 60_000 } as unknown as SectionDeps;

    settleLater(deps, "t", full);
    await new Promise((r) => setImmediate(r));
    const room = columns.takeRoom("t");
    expect(room).not.toBeNull();
    expect(room!.bytes.length).toBeGreaterThanOrEqual(bytes.length);
    expect(room!.starts.length).toBeGreaterThan(kept.section.count);
  });

  it("makes none ahead for a section it does not keep in columns (written whole: it is read once the body is there)", async () => {
    const columns = createSectionColumnsCache();
    const full = { revision_id: 8, base_revision_id: 0, sha256: "b".repeat(64), size: 8 << 20, chunk: 0, made_from: null, made_depth: 0 } as BundleSectionMeta;
    settleLater({ columns, sql: {} as Sql, bodyDelayMs: 60_000 } as unknown as SectionDeps, "t", full);
    await new Promise((r) => setImmediate(r));
    expect(columns.takeRoom("t")).toBeNull();
  });
});
