// The controller in a process of its own, for the benches that measure it alone (its RSS not
// mixed with the bench's data, its CPU not shared with the load generator's thread): started
// from packages/controller/dist as startController with the configuration the bench gives, its
// API's URL and a bare Fastify route's (served by the same process, for latency comparisons)
// sent back over IPC. The process's memory is read from /proc.
//
//   const c = await forkController({ DATABASE_URL, BOOTSTRAP_API_KEY, ... });
//   c.url, c.bareUrl; c.resetPeak(); ...; c.memory() → { rssMiB, peakMiB }; await c.close();
//
// BENCH_CONTROLLER_NODE_ARGS (e.g. "--heap-prof --heap-prof-dir=/tmp/prof") are given to its node;
// BENCH_CONTROLLER_DIST runs another build's packages/controller/dist instead of this one's.
import { fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { ask } from "./ipc.mjs";

/** The VmRSS and VmHWM (peak since the start or the last reset) of process `pid`, in MiB. */
export function procMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)[1]);
  return { rssMiB: kib("VmRSS") / 1024, peakMiB: kib("VmHWM") / 1024 };
}

/** The controller started with `env` (its configuration, as loadConfig reads it) in a child process, listening on 127.0.0.1. */
export async function forkController(env) {
  const execArgv = (process.env.BENCH_CONTROLLER_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child = fork(new URL(import.meta.url), ["child", JSON.stringify(env)], { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const { url, bareUrl } = await ask(child, null, "ready");
  // Sampled as well as read at the end: VmHWM counts pages the kernel has since dropped too.
  let sampledMiB = 0;
  const sample = () => {
    sampledMiB = Math.max(sampledMiB, procMemory(child.pid).rssMiB);
  };
  const timer = setInterval(sample, 50);
  return {
    url,
    bareUrl,
    pid: child.pid,
    /** Starts the peak (VmHWM and the sampled VmRSS) again from the current RSS. */
    resetPeak() {
      writeFileSync(`/proc/${child.pid}/clear_refs`, "5");
      sampledMiB = 0;
      sample();
    },
    /** { rssMiB, peakMiB (VmHWM), sampledPeakMiB (VmRSS every 50 ms) } since the start or the last resetPeak(). */
    memory() {
      sample();
      return { ...procMemory(child.pid), sampledPeakMiB: sampledMiB };
    },
    /** The V8 heap and buffers of the process now (process.memoryUsage(), MiB). */
    async usage() {
      return (await ask(child, { type: "usage" }, "usage")).usage;
    },
    /**
     * closedLoopLoad (http-load.mjs) run inside the controller's process against its API (`paths`
     * in turn) or the bare route (`paths` null): client and server on the same CPU, as the
     * lookup's target was first measured; from the bench's process the client of the cheaper
     * route is the bottleneck instead, and the p99 ratio follows the two routes' rates.
     */
    async loadInside(paths, seconds, key) {
      return (await ask(child, { type: "load", paths, seconds, key }, "load")).result;
    },
    async close() {
      clearInterval(timer);
      await ask(child, { type: "close" }, "closed");
    },
  };
}

if (process.argv[2] === "child") {
  const { default: Fastify } = await import("fastify");
  // BENCH_CONTROLLER_DIST: another build's packages/controller/dist, as in lookup-latency.mjs.
  const dist = process.env.BENCH_CONTROLLER_DIST
    ? pathToFileURL(`${process.env.BENCH_CONTROLLER_DIST}/`).href
    : new URL("../packages/controller/dist/", import.meta.url).href;
  const { loadConfig } = await import(`${dist}config.js`);
  const { startController } = await import(`${dist}controller.js`);
  const env = JSON.parse(process.argv[3]);
  const controller = await startController(loadConfig(env), { logger: Boolean(env.LOG_LEVEL) && env.LOG_LEVEL !== "silent" });
  const url = await controller.app.listen({ host: "127.0.0.1", port: 0 });
  const bare = Fastify();
  bare.get("/bare", async () => ({ ok: true }));
  const bareUrl = await bare.listen({ host: "127.0.0.1", port: 0 });
  const { closedLoopLoad } = await import("./http-load.mjs");
  process.on("message", async (m) => {
    if (m.type === "load") {
      const result = m.paths
        ? await closedLoopLoad(url, (n) => m.paths[n % m.paths.length], m.seconds, m.key)
        : await closedLoopLoad(bareUrl, () => "/bare", m.seconds, m.key);
      process.send({ type: "load", result });
    } else if (m.type === "usage") {
      const u = process.memoryUsage();
      process.send({ type: "usage", usage: Object.fromEntries(Object.entries(u).map(([k, v]) => [k, Math.round(v / 2 ** 20)])) });
    } else if (m.type === "close") {
      await bare.close();
      await controller.close();
      process.send({ type: "closed" }, () => process.exit(0));
    }
  });
  process.send({ type: "ready", url, bareUrl });
}
