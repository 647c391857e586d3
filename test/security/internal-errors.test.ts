import { Writable } from "node:stream";
import { AppError } from "@rlc/shared/errors";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import errorsPlugin from "../../packages/controller/src/plugins/errors.js";

const leak = 'relation "api_keys" does not exist at /srv/rlc/packages/controller/dist/db/api-keys.js:12';

async function appWithLog() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  const app = Fastify({ logger: { level: "error", stream } });
  await app.register(errorsPlugin);
  // A job that failed inside (`?wait=true` answers with the job's problem) and a plain bug.
  app.get("/job-failed", async () => {
    throw new AppError("internal", leak, { extra: { job_id: "j1" } });
  });
  app.get("/bug", async () => {
    throw new Error(leak);
  });
  await app.ready();
  return { app, lines };
}

describe("a 500 says nothing about the inside", () => {
  for (const url of ["/job-failed", "/bug"]) {
    it(`${url}: generic detail in the body, the real error in the log with the request id`, async () => {
      const { app, lines } = await appWithLog();
      const res = await app.inject({ method: "GET", url });
      expect(res.statusCode).toBe(500);
      const body = res.json();
      expect(body.code).toBe("internal");
      expect(res.body).not.toContain("api_keys");
      expect(res.body).not.toContain("/srv/");
      expect(body.detail).toBe("internal error");
      const logged = lines.find((l) => JSON.stringify(l).includes("does not exist"));
      expect(logged, JSON.stringify(lines)).toBeDefined();
      expect(logged!.reqId).toBe(body.request_id);
      await app.close();
    });
  }
});
