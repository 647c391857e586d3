import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { assertBuilt, type ControllerProcess, newBootstrapKey, startControllerProcess } from "./controller-process.js";

// Two controller processes on one PostgreSQL database and one NATS server: a write through one
// is seen by the other's lookup within a bus round-trip, well inside the 1 s re-check.
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
let db: TestDatabase;
let dataDir: string;
const key = newBootstrapKey();
const running: ControllerProcess[] = [];

async function start(name: string, service: "app-all" | "api"): Promise<ControllerProcess> {
  return startControllerProcess(running, name, {
    APP_SERVICE: service,
    DATABASE_URL: db.url,
    NATS_URL: natsUrl,
    BOOTSTRAP_API_KEY: key,
    APP_DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
  });
}

beforeAll(async () => {
  assertBuilt(["plugins/lookup-invalidation.js"]);
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "rlc-ryw-"));
});
afterAll(async () => {
  for (const p of running.splice(0)) await p.stop();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** A bus round-trip on loopback, with room to spare; far below the 1 s re-check. */
const ROUND_TRIP_MS = 150;

describe("lookup on two replicas (PostgreSQL, NATS)", () => {
  it("a write through one replica shows in the other's next lookup within a bus round-trip", async () => {
    const writer = await start("writer", "app-all");
    const reader = await start("reader", "api");
    const mod = (await writer.call(key, "POST", "/v1/modules", { name: "ryw", type: "IP_RANGES" })).json;
    const lookup = async (q: string) => (await reader.call(key, "GET", `/v1/lookup?q=${q}`)).json;

    for (const [i, cidr] of ["13.1.0.0/16", "13.2.0.0/16", "13.3.0.0/16"].entries()) {
      const address = cidr.replace("0.0/16", "9.9");
      expect((await lookup(address)).matched).toBe(false); // the reader's view is fresh this instant
      const started = Date.now();
      const added = await writer.call(key, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr });
      expect(added.status).toBe(201);
      await new Promise((r) => setTimeout(r, ROUND_TRIP_MS));
      const seen = await lookup(address);
      expect(Date.now() - started, `round ${i}`).toBeLessThan(900);
      expect(seen.matches, `round ${i}`).toEqual([expect.objectContaining({ layer: "entry", value: cidr })]);
    }

    // A refresh run by the writer's worker: its end notice reaches the reader.
    expect((await lookup("13.1.9.9")).revision).toBeNull();
    const refreshed = await writer.call(key, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(refreshed.status).toBe(200);
    await new Promise((r) => setTimeout(r, ROUND_TRIP_MS));
    expect((await lookup("13.1.9.9")).revision).toMatchObject({ revision_id: refreshed.json.result.revision_id, prefix: "13.1.0.0/16" });
  }, 90_000);
});
