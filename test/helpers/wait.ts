import type { InjectOptions, LightMyRequestResponse } from "fastify";

/**
 * Waits until `probe` answers something truthy, asking every `stepMs`; throws naming `what`
 * after `ms`. The one polling loop of the tests: a bound here is how long a user would wait,
 * never a figure the test asserts.
 */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 15_000, stepMs = 100): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Either test controller: the in-process one (controller.ts) or the listening one (live-controller.ts). */
interface JobReader {
  controller: { app: { inject(opts: InjectOptions): Promise<LightMyRequestResponse> } };
  rootKey: string;
}

/**
 * Polls a job until it is finished (or `ms` passed) and answers its last state, so the
 * caller's assertion shows where a job that never ended was left.
 */
export async function untilJobDone(t: JobReader, jobId: string, ms = 30_000): Promise<any> {
  const end = Date.now() + ms;
  for (;;) {
    const res = await t.controller.app.inject({ method: "GET", url: `/v1/jobs/${jobId}`, headers: { authorization: `Bearer ${t.rootKey}` } });
    const job = res.json();
    if (!["queued", "running", "awaiting"].includes(job.status) || Date.now() > end) return job;
    await new Promise((r) => setTimeout(r, 100));
  }
}
