import { type IncomingMessage, request } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControllerHttpClient } from "../../packages/agent/src/bundle/http-client.js";
import { type BundleChunk, bearerMetadata, grpc } from "../../packages/proto/src/index.js";
import { AGENT_HEADERS, agentClient } from "../helpers/agent-grpc.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// The HTTP bundle route under the gRPC GetBundle limits, counted once for both transports: one
// node key has at most 2 transfers in flight, the others are told to come back (429 with
// Retry-After), and the agent's HTTP client comes back. Bodies stream from storage; compressed,
// a revision's section is compressed once for every speaker.

let t: TestController;
let base: string;
let revisionId: number;
const speakers: { id: string; key: string; tenantId: string; keys: { key_id: string; public_key: string; status: "active" | "retired" }[] }[] = [];

beforeAll(async () => {
  t = await startTestController({ env: { GRPC_HOST: "127.0.0.1", GRPC_PORT: "0", GRPC_INSECURE: "true" }, start: { grpc: true } });
  await t.app.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const call = (key: string, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });
  const community = (await call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
  const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
  for (let i = 0; i < 200; i++) await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: `10.${i}.0.0/16` });
  revisionId = (await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
  for (const name of ["edge-1", "edge-2"]) {
    const created = (await call(t.rootKey, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.1", asn: 65010 })).json();
    const enrolled = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: name, agent_version: "1.0.0" })).json();
    speakers.push({ id: created.id, key: enrolled.api_key, tenantId: enrolled.tenant_id, keys: enrolled.signing_keys });
  }
  await call(t.rootKey, "POST", "/v1/apply", { speaker_ids: speakers.map((s) => s.id), timeout_seconds: 5 });
  for (const s of speakers) {
    await until("the bundle", async () => (await call(s.key, "GET", `/v1/speakers/${s.id}/revisions/latest`)).statusCode === 200);
  }
}, 120_000);
afterAll(async () => t?.close());

/**
 * Holds every read of a bundle from storage until the returned function is called: transfers
 * that got a place stay in flight for as long as the test needs.
 */
function holdReads(): () => void {
  const node = t.controller.deps.services.node;
  const real = node.bundleReader;
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  node.bundleReader = async (...args) => {
    const reader = await real(...args);
    return { ...reader, read: async (offset: number, length: number) => opened.then(() => reader.read(offset, length)) };
  };
  return () => {
    open();
    node.bundleReader = real;
  };
}

interface Answer {
  status: number;
  headers: IncomingMessage["headers"];
  body: Promise<Buffer>;
}

/** One GET on a connection of its own: its status and headers, then its raw body (not decompressed). */
function get(path: string, key: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent: false, headers: { authorization: `Bearer ${key}`, ...AGENT_HEADERS, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      const body = new Promise<Buffer>((done, failed) => {
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => done(Buffer.concat(chunks)));
        res.on("error", failed);
      });
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
    });
    req.on("error", reject);
    req.end();
  });
}

const bundlePath = (s: { id: string }) => `/v1/speakers/${s.id}/bundle/${revisionId}`;

describe("bundle downloads share the gRPC limits", () => {
  it("40 downloads at once by one node key: 2 are served, 38 are refused with 429 rate_limited and Retry-After", async () => {
    const s = speakers[0]!;
    const limiter = t.controller.deps.services.bundleDownloads.limiter;
    const release = holdReads();
    const answers = Array.from({ length: 40 }, () => get(bundlePath(s), s.key));
    const settled: Answer[] = [];
    for (const a of answers) void a.then((x) => settled.push(x));
    await until("38 answers", async () => settled.filter((a) => a.status !== 200).length >= 38, 20_000, 20);
    // The two with a place are still in flight, and no third has one.
    expect(limiter.held()).toBe(2);
    expect(limiter.waiting()).toBe(0);
    release();
    const all = await Promise.all(answers);
    expect(all.map((a) => a.status).sort()).toEqual([...Array(2).fill(200), ...Array(38).fill(429)]);
    for (const refused of all.filter((a) => a.status === 429)) {
      expect(refused.headers["retry-after"]).toBe("2");
      expect(refused.headers["content-type"]).toContain("application/problem+json");
      expect(JSON.parse((await refused.body).toString())).toMatchObject({ code: "rate_limited" });
    }
    const served = all.filter((a) => a.status === 200);
    const [one, two] = await Promise.all(served.map((a) => a.body));
    expect(one!.equals(two!)).toBe(true);
    expect(Number(served[0]!.headers["content-length"])).toBe(one!.length);
    const verified = await verifyBundle(
      one!,
      s.keys.map((k) => ({ ...k, alg: "ed25519" as const })),
      { speakerId: s.id, tenantId: s.tenantId, lastSequence: null, now: new Date() },
    );
    expect(verified.payload.revision_id).toBe(revisionId);
    // The places went back with the transfers: the next download is served.
    await until("the places back", async () => limiter.held() === 0, 5000, 20);
    expect((await get(bundlePath(s), s.key)).status).toBe(200);
  }, 60_000);

  it("while a key has 2 HTTP downloads in flight, its gRPC GetBundle is refused RESOURCE_EXHAUSTED: one count for both transports", async () => {
    const s = speakers[0]!;
    const release = holdReads();
    const held = [get(bundlePath(s), s.key), get(bundlePath(s), s.key)];
    await until("two places taken", async () => t.controller.deps.services.bundleDownloads.limiter.held() === 2, 10_000, 20);
    const client = agentClient(t.controller.grpc!.address);
    try {
      const status = await new Promise<grpc.StatusObject>((resolve) => {
        const call = client.getBundle({ speaker_id: s.id, revision_id: revisionId }, bearerMetadata(s.key));
        call.on("data", (_: BundleChunk) => undefined);
        call.on("error", () => undefined);
        call.on("status", resolve);
      });
      expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    } finally {
      client.close();
      release();
    }
    expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200]);
  });

  it("the agent's HTTP client takes a 429 as 'later': it waits the Retry-After and then receives the bundle", async () => {
    const s = speakers[0]!;
    const release = holdReads();
    const held = [get(bundlePath(s), s.key), get(bundlePath(s), s.key)];
    await until("two places taken", async () => t.controller.deps.services.bundleDownloads.limiter.held() === 2, 10_000, 20);
    const waits: number[] = [];
    const client = new ControllerHttpClient({
      baseUrl: base,
      nodeKey: s.key,
      random: () => 0,
      // The wait the controller asked for is when the transfers in flight end.
      sleep: async (ms) => {
        waits.push(ms);
        release();
        await Promise.all(held.map(async (a) => (await a).body));
        await until("the places back", async () => t.controller.deps.services.bundleDownloads.limiter.held() === 0, 5000, 20);
      },
    });
    const received = await client.fetchBundle(s.id, revisionId, { maxBytes: 64 * 1024 * 1024 });
    expect(waits).toEqual([2000]);
    expect(received.bytes.length).toBeGreaterThan(0);
  });
});

describe("bundle downloads stream and compress once", () => {
  it("with Accept-Encoding: gzip, a revision's section is compressed once for every speaker and download; each body unzips to its bundle", async () => {
    const downloads = t.controller.deps.services.bundleDownloads;
    for (const s of [speakers[0]!, speakers[1]!, speakers[0]!]) {
      const plain = await get(bundlePath(s), s.key);
      const zipped = await get(bundlePath(s), s.key, { "accept-encoding": "gzip" });
      expect(zipped.status).toBe(200);
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      const body = await zipped.body;
      expect(Number(zipped.headers["content-length"])).toBe(body.length);
      expect(gunzipSync(body).equals(await plain.body)).toBe(true);
    }
    // This file has one revision, downloaded compressed many times (the agent's client asks for gzip too).
    expect(downloads.sectionsCompressed()).toBe(1);
  });
});
