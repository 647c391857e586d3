import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { fill, type Operation, operationsOf } from "./operations.js";

// Every path of the OpenAPI document, spelled every way a router might read differently from
// a plain string test (percent-encoding of each character, `//`, `/./`, `..`, `;params`,
// trailing slash, upper case, absolute-form request line), sent as raw request lines over a
// real socket: without a key nothing protected answers 2xx, and nothing answers 5xx.

let dir: string;
let t: TestController;
let base: { host: string; port: number };
let ops: Operation[];
// A fresh connection per request: a request line the HTTP parser refuses closes its socket.
const agent = new Agent({ keepAlive: false, maxSockets: 16 });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-spelling-"));
  await writeFile(join(dir, "app.log"), "a line only a key may read\n");
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir } });
  await t.app.listen({ host: "127.0.0.1", port: 0 });
  const addr = t.app.server.address() as { port: number };
  base = { host: "127.0.0.1", port: addr.port };
  ops = operationsOf((await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json());
});
afterAll(async () => {
  agent.destroy();
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

function send(method: string, path: string): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ ...base, agent, method, path, headers: { "content-type": "application/json" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), type: String(res.headers["content-type"]) }));
    });
    req.on("error", reject);
    req.end(method === "GET" || method === "DELETE" ? undefined : "{}");
  });
}

const enc = (c: string) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`;

/** The spellings of one concrete path; `eachCharacter` adds one per character percent-encoded. */
function spellings(path: string, eachCharacter: boolean): string[] {
  const out = new Set<string>([path]);
  for (let i = 1; eachCharacter && i < path.length; i++) {
    const c = path[i]!;
    if (c === "/") continue;
    out.add(path.slice(0, i) + enc(c) + path.slice(i + 1));
    out.add(path.slice(0, i) + enc(c).toUpperCase() + path.slice(i + 1));
  }
  out.add(path.replace(/[^/]/g, enc));
  out.add(path.replace(/\//g, "%2F"));
  out.add(path.replace(/\//g, "%2f").replace(/^%2f/, "/"));
  const slashes = [...path.matchAll(/\//g)].map((m) => m.index!);
  for (const at of slashes) {
    out.add(`${path.slice(0, at)}/${path.slice(at)}`); // `//`
    out.add(`${path.slice(0, at)}/.${path.slice(at)}`); // `/./`
    out.add(`${path.slice(0, at)}/x/..${path.slice(at)}`); // `/x/../`
    out.add(`${path.slice(0, at)}/%2e%2e${path.slice(at)}`);
    if (at > 0) out.add(`${path.slice(0, at)};p=1${path.slice(at)}`);
  }
  out.add(`${path};p=1`);
  out.add(`${path}/`);
  out.add(`${path}/.`);
  out.add(`${path}?`);
  out.add(`${path}#x`);
  out.add(path.toUpperCase());
  out.add(path.replace("/v1/", "/V1/"));
  out.add(`http://x${path}`);
  out.add(`HTTP://X${path}`);
  out.add(`http://x:1${path}`);
  out.add(`//x${path}`);
  out.add(`/..${path}`);
  out.add(`/%2e%2e${path}`);
  out.add(`${path}%00`);
  out.add(`${path}%`);
  out.add(`${path}%zz`);
  out.add(`${path}%ff`);
  out.add(`${path}%c0%af`);
  out.add(path.replace(/\//g, "\\"));
  return [...out];
}

describe("the spelling corpus over every OpenAPI path, without a key", () => {
  it("never answers 2xx on a protected route, never 5xx, and never the log's text", async () => {
    const failures: string[] = [];
    let sent = 0;
    const seen = new Set<string>();
    for (const op of ops) {
      const path = fill(op);
      // Each character encoded once per path (the router decodes before it looks at the
      // method); the other spellings for every method.
      const variants = spellings(path, !seen.has(path));
      seen.add(path);
      for (let i = 0; i < variants.length; i += 16) {
        await Promise.all(
          variants.slice(i, i + 16).map(async (v) => {
            const res = await send(op.method, v).catch((err: Error) => ({ status: -1, body: err.message, type: "" }));
            if (res.status === -1) {
              failures.push(`${op.method} ${v} → ${res.body}`);
              return;
            }
            sent++;
            const publicOp = op.minRole === "public";
            if (res.status >= 500) failures.push(`${op.method} ${v} → ${res.status} ${res.body.slice(0, 200)}`);
            else if (res.status < 300 && !publicOp) failures.push(`${op.method} ${v} → ${res.status} without a key`);
            if (res.body.includes("a line only a key may read")) failures.push(`${op.method} ${v} → the log's text`);
            if (res.status >= 400 && !res.type.startsWith("application/problem+json"))
              failures.push(`${op.method} ${v} → ${res.status} ${res.type}: ${res.body.slice(0, 100)}`);
          }),
        );
      }
    }
    expect(ops.length).toBeGreaterThan(60);
    expect(sent).toBeGreaterThan(ops.length * 30);
    expect(failures.slice(0, 40), `${failures.length} failures`).toEqual([]);
  }, 60_000);
});
