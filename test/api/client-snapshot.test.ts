import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { snapshotOf } from "../../packages/client/scripts/snapshot.mjs";
import { startTestController, type TestController } from "../helpers/controller.js";

const clientDir = new URL("../../packages/client/", import.meta.url);
const regenerate = "run `npx turbo run build && npm run generate -w packages/client` and commit openapi.json";

/** The first line where two texts part, so a stale snapshot's message says where it is stale. */
function firstDifference(a: string, b: string): string {
  const x = a.split("\n");
  const y = b.split("\n");
  const i = x.findIndex((line, n) => line !== y[n]);
  const at = i === -1 ? x.length : i;
  return `line ${at + 1}: committed ${JSON.stringify(y[at] ?? "<end>")}, now ${JSON.stringify(x[at] ?? "<end>")}`;
}

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("@rlc/client snapshot", () => {
  it("openapi.json is the document the controller serves", async () => {
    const served = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    const committed = await readFile(new URL("openapi.json", clientDir), "utf8");
    // Compared as text, not deep-equal: order matters to the generated types too.
    const now = snapshotOf(served);
    expect(now === committed, `packages/client/openapi.json is stale (${firstDifference(now, committed)}): ${regenerate}`).toBe(true);
  });
});
