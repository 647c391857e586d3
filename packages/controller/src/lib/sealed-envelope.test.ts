import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openPieces, sealEnvelope, sealedRange } from "./sealed-envelope.js";
import { createSecretBox, SEALED_BYTES_OVERHEAD } from "./secret-box.js";

const box = createSecretBox(Buffer.alloc(32, 3));

describe("sealed bundle envelopes", () => {
  it("any slice of the plain envelope opens from the pieces sealedRange names", async () => {
    const plain = randomBytes(1000);
    const sealed = await sealEnvelope(box, plain, 64);
    expect(sealed.length).toBe(plain.length + Math.ceil(1000 / 64) * SEALED_BYTES_OVERHEAD);
    expect((await openPieces(box, sealed, 64)).equals(plain)).toBe(true);
    for (const [offset, length] of [
      [0, 64],
      [63, 2],
      [100, 300],
      [960, 200],
      [999, 1],
      [1000, 64],
    ] as const) {
      const range = sealedRange(64, offset, length);
      const opened = await openPieces(box, sealed.subarray(range.from, range.from + range.length), 64);
      expect(opened.subarray(range.skip, range.skip + length).equals(plain.subarray(offset, offset + length))).toBe(true);
    }
  });

  it("a piece altered in storage, or sealed under another key, does not open", async () => {
    const sealed = await sealEnvelope(box, Buffer.from('password "x"'.repeat(20)), 32);
    const altered = Buffer.from(sealed);
    altered[SEALED_BYTES_OVERHEAD + 40]! ^= 1;
    await expect(openPieces(box, altered, 32)).rejects.toThrow();
    await expect(openPieces(createSecretBox(Buffer.alloc(32, 4)), sealed, 32)).rejects.toThrow();
  });
});
