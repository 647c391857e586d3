// Closed-loop HTTP load for the latency benches: 32 requests in flight over 16 connections for
// `seconds`, each request sent as soon as the previous one of its slot is answered. Besides the
// rate and latency it reports the process's CPU time per request (client and server together
// when both run in this process): on a shared, busy machine the rate follows the CPU the
// process is given, the CPU a request takes much less so.
import { performance } from "node:perf_hooks";
import { Pool } from "undici";

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

/** Requests/s, p50/p99 latency (ms) and CPU µs per request of GET `pathFor(n)` against `base`, with the Bearer `key`. */
export async function closedLoopLoad(base, pathFor, seconds, key) {
  const pool = new Pool(base, { connections: 16, pipelining: 1 });
  const lat = [];
  let n = 0;
  const cpu = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        const res = await pool.request({ method: "GET", path: pathFor(n++), headers: { authorization: `Bearer ${key}` } });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        lat.push(performance.now() - s);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  await pool.close();
  return { rps: lat.length / seconds, p50: pct(lat, 0.5), p99: pct(lat, 0.99), cpuUs: (used.user + used.system) / lat.length };
}
