import { randomBytes } from "node:crypto";
import { crc32, gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { crc32Combine, deflatePart, GZIP_HEADER, gzipTrailer } from "./gzip-parts.js";

describe("a bundle gzipped in parts", () => {
  it("gunzips, header + parts + trailer, to the plain bytes of all the parts in order", async () => {
    // Sections are deflated once and kept; a bundle is their concatenation, so any gunzip
    // (the agent's, curl --compressed) must read it as one stream.
    const plains = [Buffer.from("protocol static rlc_v4 {\n".repeat(200)), randomBytes(70_000), Buffer.from("}\n")];
    const parts = [];
    for (const [i, plain] of plains.entries()) parts.push(await deflatePart(plain, i === plains.length - 1));
    const gz = Buffer.concat([GZIP_HEADER, ...parts.map((p) => p.deflated), gzipTrailer(parts)]);
    expect(gunzipSync(gz).equals(Buffer.concat(plains))).toBe(true);
  });

  it("combines CRC-32s as if the bytes had been checksummed in one pass", () => {
    const a = randomBytes(1000);
    const b = randomBytes(3333);
    expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(crc32(Buffer.concat([a, b])));
    expect(crc32Combine(crc32(a), 0, 0)).toBe(crc32(a));
  });

  it("gunzips a bundle of one empty last part to nothing", async () => {
    const part = await deflatePart(Buffer.alloc(0), true);
    expect(gunzipSync(Buffer.concat([GZIP_HEADER, part.deflated, gzipTrailer([part])])).length).toBe(0);
  });
});
