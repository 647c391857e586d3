import { describe, expect, it } from "vitest";
import { evaluateJsonPath, JsonPathError, parseJsonPath } from "./json-path.js";

const select = (path: string, document: unknown) => evaluateJsonPath(parseJsonPath(path), document);

describe("parseJsonPath", () => {
  it("parses the documented examples", () => {
    expect(parseJsonPath("prefixes[*].ip_prefix").steps).toEqual([{ kind: "key", name: "prefixes" }, { kind: "every" }, { kind: "key", name: "ip_prefix" }]);
    expect(parseJsonPath("prefixes[*]?service=CLOUDFRONT.ip_prefix").steps).toEqual([
      { kind: "key", name: "prefixes" },
      { kind: "every" },
      { kind: "filter", key: "service", value: "CLOUDFRONT" },
      { kind: "key", name: "ip_prefix" },
    ]);
    expect(parseJsonPath("result.ipv4_cidrs").steps).toEqual([
      { kind: "key", name: "result" },
      { kind: "key", name: "ipv4_cidrs" },
    ]);
  });

  it("parses indexes, chained filters and a document that is an array", () => {
    expect(parseJsonPath("a[0][*]?k=v?region=us-east-1.b").steps).toEqual([
      { kind: "key", name: "a" },
      { kind: "index", index: 0 },
      { kind: "every" },
      { kind: "filter", key: "k", value: "v" },
      { kind: "filter", key: "region", value: "us-east-1" },
      { kind: "key", name: "b" },
    ]);
    expect(parseJsonPath("[*]").steps).toEqual([{ kind: "every" }]);
  });

  it.each([
    ["", 0, /empty/],
    [".a", 0, /expected a key/],
    ["a.", 2, /expected a key/],
    ["a..b", 2, /expected a key/],
    ["a[", 1, /expected \[\*\] or \[N\]/],
    ["a[x]", 1, /expected \[\*\] or \[N\]/],
    ["a[-1]", 1, /expected \[\*\] or \[N\]/],
    ["a[0]?k=v", 4, /may only follow \[\*\]/],
    ["a?k=v", 1, /may only follow \[\*\]/],
    ["a[*]?=v", 5, /expected a key after \?/],
    ["a[*]?k", 6, /expected = after \?k/],
    ["a[*]?k=", 7, /expected a value/],
    ["a[*]?k=v[0]", 8, /nothing but \. or \? may follow a filter/],
    ["a]", 1, /unexpected "\]"/],
    ["$.prefixes[*].ip_prefix", 0, /without \$/],
  ])("refuses %j at position %i", (path, position, message) => {
    try {
      parseJsonPath(path);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(JsonPathError);
      expect(err).toMatchObject({ code: "invalid_json_path", position });
      expect((err as Error).message).toMatch(message);
    }
  });

  it("refuses a path longer than 512 characters", () => {
    expect(() => parseJsonPath("a.".repeat(300) + "b")).toThrow(/longer than 512/);
  });
});

describe("evaluateJsonPath", () => {
  const doc = {
    prefixes: [
      { ip_prefix: "1.0.0.0/24", service: "AMAZON", port: 443 },
      { ip_prefix: "2.0.0.0/24", service: "CLOUDFRONT", port: 80 },
      { service: "CLOUDFRONT" },
      "a string element",
      null,
    ],
    nested: [[{ v: "x" }], [{ v: "y" }]],
  };

  it("skips elements that lack the key", () => {
    expect(select("prefixes[*].ip_prefix", doc)).toEqual(["1.0.0.0/24", "2.0.0.0/24"]);
  });

  it("keeps only the elements matching a filter, comparing numbers as text", () => {
    expect(select("prefixes[*]?service=CLOUDFRONT.ip_prefix", doc)).toEqual(["2.0.0.0/24"]);
    expect(select("prefixes[*]?port=443.ip_prefix", doc)).toEqual(["1.0.0.0/24"]);
    expect(select("prefixes[*]?service=NONE.ip_prefix", doc)).toEqual([]);
  });

  it("takes one element by index, and nothing past the end", () => {
    expect(select("prefixes[1].ip_prefix", doc)).toEqual(["2.0.0.0/24"]);
    expect(select("prefixes[9].ip_prefix", doc)).toEqual([]);
    expect(select("nested[*][0].v", doc)).toEqual(["x", "y"]);
  });

  it("reaches nothing when the shape does not fit, without throwing", () => {
    expect(select("prefixes.ip_prefix", doc)).toEqual([]);
    expect(select("missing[*].x", doc)).toEqual([]);
    expect(select("[*]", doc)).toEqual([]);
  });

  it("does not walk into the prototype chain", () => {
    expect(select("constructor", {})).toEqual([]);
    expect(select("a.toString", { a: {} })).toEqual([]);
  });

  it("walks an array of 200 000 elements", () => {
    const many = { list: Array.from({ length: 200_000 }, (_, i) => ({ p: String(i) })) };
    expect(select("list[*].p", many)).toHaveLength(200_000);
  });
});
