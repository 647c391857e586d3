import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { prefixesHash } from "./revision-builder.js";

describe("prefixesHash", () => {
  it("is SHA-256 of the texts each followed by a newline, across the slices it joins and for none", () => {
    const hash = (texts: readonly string[]) =>
      createHash("sha256")
        .update(texts.map((t) => `${t}\n`).join(""))
        .digest("base64");
    for (const n of [0, 1, 16_383, 16_384, 16_385, 40_000]) {
      const texts = Array.from({ length: n }, (_, k) => `11.${k >> 8}.${k & 255}.0/24`);
      expect(prefixesHash(texts)).toBe(hash(texts));
    }
    // One text more or less, or two swapped, is another hash.
    expect(prefixesHash(["11.0.0.0/24", "11.0.1.0/24"])).not.toBe(prefixesHash(["11.0.1.0/24", "11.0.0.0/24"]));
    expect(prefixesHash(["11.0.0.0/24"])).not.toBe(prefixesHash(["11.0.0.0/24", ""]));
  });
});
