import { describe, expect, it } from "vitest";
import { canonicalJson, canonicalJsonBytes } from "./canonical-json.js";

describe("canonicalJson", () => {
  it("sorts keys at every depth and writes no whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: "x" } })).toBe('{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}');
  });

  it("gives the same text whatever order the keys were inserted in", () => {
    expect(canonicalJson({ x: 1, y: 2 })).toBe(canonicalJson({ y: 2, x: 1 }));
  });

  it("sorts by UTF-16 code units, as RFC 8785 does", () => {
    expect(canonicalJson({ "\u00e9": 1, z: 2, Z: 3, "10": 4, "9": 5 })).toBe('{"10":4,"9":5,"Z":3,"z":2,"\u00e9":1}');
  });

  it("leaves undefined members out and refuses what JSON cannot say once", () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(() => canonicalJson([undefined])).toThrow(TypeError);
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/finite/);
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
  });

  it("escapes strings as JSON does and encodes UTF-8", () => {
    expect(canonicalJson('a"\n\u2028')).toBe(JSON.stringify('a"\n\u2028'));
    expect(Array.from(canonicalJsonBytes("é"))).toEqual([0x22, 0xc3, 0xa9, 0x22]);
  });
});
