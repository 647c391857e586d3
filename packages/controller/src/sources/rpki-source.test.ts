import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboundClient } from "./outbound.js";
import { createRpkiValidator } from "./rpki-source.js";

let dir: string;
const outbound = createOutboundClient({ allowCidrs: [] });
const HOUR = 3_600_000;
const T0 = Date.parse("2026-11-27T08:00:00Z");

const rpkiClientDoc = (asn: number) =>
  JSON.stringify({ metadata: { buildtime: new Date(T0).toISOString() }, roas: [{ asn, prefix: "192.0.2.0/24", maxLength: 24, ta: "ripe" }] });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rpki-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await outbound.close();
});

describe("the VRP source", () => {
  it("reads an rpki-client document from a file and reads it again only once the refresh interval has passed", async () => {
    const path = join(dir, "vrps.json");
    await writeFile(path, rpkiClientDoc(64500));
    let now = T0 + HOUR;
    const v = createRpkiValidator({ spec: `file:${path}`, outbound, refreshMinutes: 10, maxAgeHours: 24, now: () => now });
    expect((await v.index())?.validate("192.0.2.0/24", 64500)).toBe("valid");
    expect(v.status()).toMatchObject({ available: true, reason: null, vrp_count: 1, generated_at: "2026-11-27T08:00:00.000Z" });
    await writeFile(path, rpkiClientDoc(64501));
    now += 9 * 60_000;
    expect((await v.index())?.validate("192.0.2.0/24", 64500)).toBe("valid");
    now += 60_000;
    expect((await v.index())?.validate("192.0.2.0/24", 64500)).toBe("invalid");
  });

  it("is unavailable once the document is older than the maximum age by its own build time", async () => {
    const path = join(dir, "old.json");
    await writeFile(path, rpkiClientDoc(64500));
    let now = T0 + 23 * HOUR;
    const v = createRpkiValidator({ spec: `file:${path}`, outbound, maxAgeHours: 24, now: () => now });
    expect(await v.index()).not.toBeNull();
    now = T0 + 25 * HOUR;
    expect(v.peek()).toBeNull();
    expect(v.status()).toMatchObject({ available: false, reason: expect.stringMatching(/more than 24 hours ago/) });
  });

  it("is unavailable while the document fails to load, and drops the index it had", async () => {
    const path = join(dir, "flaky.json");
    await writeFile(path, rpkiClientDoc(64500));
    let now = T0;
    const v = createRpkiValidator({ spec: `file:${path}`, outbound, refreshMinutes: 1, now: () => now });
    expect(await v.index()).not.toBeNull();
    await writeFile(path, "{ truncated");
    now += 60_000;
    expect(await v.index()).toBeNull();
    expect(v.status()).toMatchObject({ available: false, vrp_count: 0, reason: expect.stringMatching(/failed to load: the VRP document is not JSON/) });
  });

  it("refuses a source that is neither file: nor http(s)", () => {
    expect(() => createRpkiValidator({ spec: "rtr://127.0.0.1:323", outbound })).toThrow(/file:<path> or an http\(s\):\/\/ URL/);
  });
});
