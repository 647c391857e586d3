import { LookupResult } from "@rlc/shared/schemas";
import { serializerCompiler } from "fastify-type-provider-zod";
import { describe, expect, it } from "vitest";
import { compiledSerializer } from "./responses.js";

const module = {
  module_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
  module_name: "ranges",
  module_type: "IP_RANGES",
  enabled: true,
  community_id: null,
  community: null,
  community_title: null,
};
const entry = { layer: "entry", ...module, entry_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d", value: "20.1.0.0/16" };
const snapshot = { layer: "snapshot", ...module, prefix: "20.0.0.0/8", source: "asn", origin: "AS64500" };
const domain = { layer: "snapshot", ...module, module_type: "DOMAINS", source: "domain", origin: "a.example", addresses: ["192.0.2.1", "2001:db8::1"] };
const notAnnounced = { announced: false, announced_prefix: null, communities: [], excluded_by: [], answer: "not announced: in no enabled list" };
const answer = { query: "20.1.1.2", kind: "ip", normalized: "20.1.1.2", matched: true, matches: [entry, snapshot], revision: null, ...notAnnounced };

describe("compiledSerializer (GET /v1/lookup's answers)", () => {
  const compiled = compiledSerializer({ schema: LookupResult });
  const parsed = serializerCompiler({ schema: LookupResult, method: "GET", url: "/v1/lookup" });

  it("writes what the zod parse writes, for every kind of match and a revision or none", () => {
    const answers = [
      answer,
      { ...answer, matches: [], matched: false },
      { ...answer, kind: "domain", query: "a.example", normalized: "a.example", matches: [domain] },
      {
        ...answer,
        revision: { revision_id: 7, prefix: "20.0.0.0/8", communities: ["65000:1"] },
        announced: true,
        announced_prefix: "20.0.0.0/8",
        communities: ["65000:1"],
        answer: "announced as 20.0.0.0/8 with 65000:1 — from module ranges",
      },
      {
        ...answer,
        matches: [{ ...snapshot, via: "AS-EXAMPLE", rpki: "invalid" }],
        excluded_by: [
          { kind: "module", module_id: module.module_id, module_name: "never", prefix: "20.1.0.0/16" },
          { kind: "tenant_exclusion", prefix: "20.1.1.0/24" },
          { kind: "min_prefix_length", prefix: "20.0.0.0/8" },
        ],
        answer: "not announced: excluded by module never, BIRD.exclude_prefixes 20.1.1.0/24, 20.0.0.0/8 shorter than the minimum length",
      },
      { ...answer, matches: [{ ...entry, community_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", community: "65000:1", community_title: "t" }] },
    ];
    for (const a of answers) expect(JSON.parse(compiled(a))).toEqual(JSON.parse(parsed(a)));
  });

  it("writes only the members the schema declares, in each match the members of its own layer", () => {
    const leaky = {
      ...answer,
      secret: "x",
      matches: [
        { ...entry, prefix: "20.0.0.0/8", secret_hash: "x" },
        { ...snapshot, entry_id: "e" },
      ],
    };
    const out = JSON.parse(compiled(leaky));
    expect(out).toEqual(JSON.parse(parsed(leaky)));
    expect(out).not.toHaveProperty("secret");
    expect(Object.keys(out.matches[0])).not.toContain("prefix");
    expect(Object.keys(out.matches[1])).not.toContain("entry_id");
  });

  it("fails, as the parse does, on an answer without a required member", () => {
    const { revision: _, ...noRevision } = answer;
    const { entry_id: __, ...noEntryId } = entry;
    for (const bad of [noRevision, { ...answer, matches: [noEntryId] }]) {
      expect(() => parsed(bad)).toThrow();
      expect(() => compiled(bad)).toThrow();
    }
  });
});
