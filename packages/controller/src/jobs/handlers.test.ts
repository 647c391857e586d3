import { describe, expect, it } from "vitest";
import type { JobRow } from "../db/jobs.js";
import type { JobContext } from "./handler.js";
import { createJobHandlers, type JobDeps } from "./handlers.js";

/** Services whose every method records its call and answers `{ from: "<service>.<method>" }`. */
function recordingServices() {
  const calls: { method: string; args: unknown[] }[] = [];
  const service = (name: string) =>
    new Proxy(
      {},
      {
        get: (_target, method) => {
          if (typeof method !== "string" || method === "then") return undefined;
          return (...args: unknown[]) => {
            calls.push({ method: `${name}.${method}`, args });
            return Promise.resolve({ from: `${name}.${method}` });
          };
        },
      },
    );
  const services = { ingest: service("ingest"), deploy: service("deploy"), maintenance: service("maintenance") } as unknown as JobDeps["services"];
  return { services, calls };
}

function contextOf(type: string, params: Record<string, unknown>): JobContext {
  const job = { id: "01900000-0000-7000-8000-0000000000aa", tenant_id: "t-1", type, params, created_by: "auto:scheduler" } as unknown as JobRow;
  const unused = () => {
    throw new Error("a handler leaves the job's steps to its service");
  };
  return { job, signal: new AbortController().signal, now: () => new Date(0), progress: unused, checkpoint: unused, complete: unused, park: unused };
}

/** Each job type, the params it carries, and the one service method its handler calls. */
const cases = [
  { type: "module_ingest", params: { module_ids: null, force: false }, method: "ingest.refresh" },
  { type: "apply", params: { revision_id: 3, speaker_ids: ["s-1"], timeout_seconds: 60 }, method: "deploy.runApply" },
  { type: "peer_reconcile", params: { peer_id: "p-1", speaker_ids: ["s-1", "s-2"] }, method: "deploy.reconcilePeer" },
  { type: "maintenance_policy_run", params: { policy_id: "m-1", trigger: "scheduler" }, method: "maintenance.runPolicy" },
  { type: "revision_prune", params: {}, method: "maintenance.runRevisionPrune" },
] as const;

describe("job handlers: each one call of a service", () => {
  it("there is one handler per job type, and no other", () => {
    const { services } = recordingServices();
    const types = createJobHandlers({ services }).map((h) => h.type);
    expect(types.sort()).toEqual(cases.map((c) => c.type).sort());
  });

  for (const c of cases) {
    it(`${c.type} calls ${c.method} once and answers what it answered`, async () => {
      const { services, calls } = recordingServices();
      const handler = createJobHandlers({ services }).find((h) => h.type === c.type)!;
      const ctx = contextOf(c.type, c.params);
      const result = await handler.run(ctx);
      expect(calls.map((x) => x.method)).toEqual([c.method]);
      expect(result).toEqual({ from: c.method });
    });
  }

  it("the job's own context reaches the service: the same object, or the job's tenant and speakers", async () => {
    const { services, calls } = recordingServices();
    const handlers = createJobHandlers({ services });
    for (const c of cases) await handlers.find((h) => h.type === c.type)!.run(contextOf(c.type, c.params));
    const argsOf = (method: string) => calls.find((x) => x.method === method)!.args;
    for (const method of ["ingest.refresh", "deploy.runApply", "maintenance.runPolicy", "maintenance.runRevisionPrune"]) {
      expect((argsOf(method)[0] as JobContext).job.type, method).toBe(cases.find((c) => c.method === method)!.type);
    }
    const [tenantId, speakerIds, createdBy] = argsOf("deploy.reconcilePeer");
    expect({ tenantId, speakerIds, createdBy }).toEqual({ tenantId: "t-1", speakerIds: ["s-1", "s-2"], createdBy: "job:01900000-0000-7000-8000-0000000000aa" });
  });

  it("lanes and priorities: refreshes are long, the rest quick; maintenance and reconciles first", () => {
    const { services } = recordingServices();
    const by = new Map(createJobHandlers({ services }).map((h) => [h.type, h]));
    expect(by.get("module_ingest")!.lane).toBe("long");
    for (const t of ["apply", "peer_reconcile", "maintenance_policy_run", "revision_prune"] as const) expect(by.get(t)!.lane ?? "quick").toBe("quick");
    expect(by.get("apply")!.maxAttempts).toBe(1); // an apply is never issued twice by a retry
    expect(by.get("maintenance_policy_run")!.priority).toBeLessThan(by.get("module_ingest")!.priority!);
  });
});
