import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSecretBox, isSealed, loadDataKey } from "./secret-box.js";

let dir: string | null = null;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

describe("data key", () => {
  it("controllers starting at once on one data directory all get the same, complete key", async () => {
    dir = await mkdtemp(join(tmpdir(), "rlc-key-"));
    const dataDir = dir;
    const loaded = await Promise.all(Array.from({ length: 12 }, () => loadDataKey({ dataDir })));
    expect(loaded.filter((k) => k.created)).toHaveLength(1);
    expect(new Set(loaded.map((k) => k.key.toString("hex"))).size).toBe(1);
    expect((await stat(join(dataDir, "secret.key"))).mode & 0o777).toBe(0o600);
    const again = await loadDataKey({ dataDir });
    expect(again.created).toBe(false);
    expect(again.key.equals(loaded[0]!.key)).toBe(true);
  });

  it("a value sealed under one key opens only under it", async () => {
    const a = createSecretBox(Buffer.alloc(32, 1));
    const b = createSecretBox(Buffer.alloc(32, 2));
    // Long enough that random base64url cannot spell it by chance (six letters: about one in 10^9;
    // the two letters "pw" it was once did, in about one run of a hundred).
    const secret = "peer password: s3cret!";
    const sealed = a.seal(secret);
    expect(isSealed(sealed)).toBe(true);
    expect(sealed).not.toContain("s3cret");
    expect(a.openText(sealed)).toBe(secret);
    expect(() => b.openText(sealed)).toThrow();
  });
});
