import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import securityHeadersPlugin from "./security-headers.js";
import writeBatchingPlugin from "./write-batching.js";

async function appWithLog() {
  const app = Fastify();
  const log: string[] = [];
  await app.register(securityHeadersPlugin);
  await app.register(writeBatchingPlugin);
  app.addHook("onResponse", (req, _reply, done) => {
    log.push(`sent ${req.url}`);
    done();
  });
  // Not async: its answer would otherwise be written before the next request is even read.
  app.get("/a/:n", (req, reply) => {
    log.push(`handled ${req.url}`);
    reply.send({ n: (req.params as { n: string }).n });
  });
  app.get("/fail", () => {
    throw Object.assign(new Error("no"), { statusCode: 409 });
  });
  return { app, log };
}

describe("write batching", () => {
  it("writes the answers of requests read together after all of them were handled, in their order", async () => {
    const { app, log } = await appWithLog();
    const answers = await Promise.all([1, 2, 3].map((n) => app.inject({ method: "GET", url: `/a/${n}` })));
    expect(answers.map((r) => r.json())).toEqual([{ n: "1" }, { n: "2" }, { n: "3" }]);
    expect(log).toEqual(["handled /a/1", "handled /a/2", "handled /a/3", "sent /a/1", "sent /a/2", "sent /a/3"]);
    await app.close();
  });

  it("answers a lone request, an error and the headers of every answer as before", async () => {
    const { app } = await appWithLog();
    const one = await app.inject({ method: "GET", url: "/a/7" });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual({ n: "7" });
    expect(one.headers["x-content-type-options"]).toBe("nosniff");
    expect(one.headers["x-request-id"]).toBeTruthy();
    const failed = await app.inject({ method: "GET", url: "/fail" });
    expect(failed.statusCode).toBe(409);
    expect(failed.headers["x-frame-options"]).toBe("DENY");
    await app.close();
  });
});
