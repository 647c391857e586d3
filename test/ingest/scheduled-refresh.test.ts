import { afterAll, beforeAll, expect, it } from "vitest";
import { moduleRefreshTask } from "../../packages/controller/src/scheduler/tasks.js";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

const ingestJobs = async () =>
  (await t.call(t.rootKey, { method: "GET", url: "/v1/jobs?type=module_ingest&limit=500" })).json().items as {
    status: string;
    params: any;
    created_by: string;
  }[];

it("modules with refresh_interval_minutes are refreshed by the scheduler, once per interval", async () => {
  const mod = await t.call(t.rootKey, { method: "POST", url: "/v1/modules", payload: { name: "timed", type: "IP_RANGES", refresh_interval_minutes: 5 } });
  expect(mod.statusCode, mod.body).toBe(201);
  const id = mod.json().id;
  await t.call(t.rootKey, { method: "POST", url: `/v1/modules/${id}/ip-range-entries`, payload: { cidr: "50.0.0.0/8" } });
  const untimed = await t.call(t.rootKey, { method: "POST", url: "/v1/modules", payload: { name: "manual", type: "IP_RANGES" } });
  expect(untimed.statusCode).toBe(201);

  const task = moduleRefreshTask(t.controller.deps.services.periodic);
  await task.run(new Date());
  await task.run(new Date()); // the first job is still pending (or done just now): no second one
  const jobs = await ingestJobs();
  expect(jobs).toHaveLength(1);
  expect(jobs[0]).toMatchObject({ params: { module_ids: [id] }, created_by: "auto:scheduler" });

  for (let i = 0; i < 100 && (await ingestJobs())[0]!.status !== "succeeded"; i++) await new Promise((r) => setTimeout(r, 50));
  expect((await ingestJobs())[0]!.status).toBe("succeeded");
  await task.run(new Date(Date.now() + 60_000));
  expect(await ingestJobs()).toHaveLength(1);
  await task.run(new Date(Date.now() + 6 * 60_000));
  expect(await ingestJobs()).toHaveLength(2);
});
