import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startFeedServer } from "../helpers/feeds.js";
import { until } from "../helpers/wait.js";

const server = join(import.meta.dirname, "../../packages/controller/dist/server.js");
const KEY = `rlk_KILLTEST_${"k".repeat(43)}`;
let db: TestDatabase;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let api: Controller;
let child: ChildProcess | null = null;

beforeAll(async () => {
  if (!existsSync(server)) throw new Error("packages/controller/dist/server.js is missing: npm test builds it (npm run build)");
  db = await createTestDatabase();
  feeds = await startFeedServer();
  // The API process takes requests and runs no worker.
  api = await startController(
    loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: "silent", APP_SERVICE: "api", BOOTSTRAP_API_KEY: KEY, APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" }),
    { logger: false },
  );
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await api?.close();
  await feeds?.close();
  await db?.drop();
});

const call = (method: "GET" | "POST", url: string, payload?: object) =>
  api.app.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload ? { payload } : {}) });

it("a refresh whose worker process is killed mid-run is taken up again and makes exactly one revision", async () => {
  const mod = (await call("POST", "/v1/modules", { name: "killed", type: "IP_RANGES" })).json();
  await call("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "60.0.0.0/8" });
  feeds.routes.set("/slow.txt", "hang");
  expect((await call("POST", `/v1/modules/${mod.id}/cdn-sources`, { url: `${feeds.base}/slow.txt`, format: "text" })).statusCode).toBe(201);

  child = spawn(process.execPath, [server], {
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      APP_SERVICE: "worker",
      HTTP_PORT: "0",
      LOG_LEVEL: process.env.DEBUG_CHILD ? "info" : "silent",
      APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
    },
    stdio: process.env.DEBUG_CHILD ? "inherit" : "ignore",
  });
  const job = (await call("POST", `/v1/modules/${mod.id}/refresh`)).json();
  // The worker process is inside the job, waiting on the stalled feed.
  await until("the worker to fetch the feed", async () => (feeds.hits.get("/slow.txt") ?? 0) > 0, 20_000);
  expect((await call("GET", `/v1/jobs/${job.job_id}`)).json().status).toBe("running");
  child.kill("SIGKILL");
  await new Promise((r) => child!.once("exit", r));
  child = null;

  // Its lease (30 s) would run out on its own; move time on for the test instead of waiting.
  await api.db.sql`UPDATE jobs SET locked_until = now() - interval '1 second' WHERE id = ${job.job_id}`;
  feeds.text("/slow.txt", ["61.0.0.0/8"]);
  const worker = await startController(
    loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: "silent", APP_SERVICE: "worker", APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" }),
    { logger: false },
  );
  try {
    const done = await until(
      "the job to succeed",
      async () => {
        const j = (await call("GET", `/v1/jobs/${job.job_id}`)).json();
        return j.status === "succeeded" ? j : undefined;
      },
      20_000,
    );
    expect(done.attempts).toBe(2);
    const revisions = (await call("GET", "/v1/revisions")).json().items;
    expect(revisions).toHaveLength(1);
    const prefixes = (await call("GET", `/v1/revisions/${revisions[0].revision_id}/prefixes`)).json().items.map((p: any) => p.prefix);
    expect(prefixes).toEqual(["60.0.0.0/7"]);
  } finally {
    await worker.close();
  }
});
