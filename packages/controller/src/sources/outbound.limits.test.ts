// Size, time and protocol limits of the outbound client, against real local servers.
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createH2cServer, createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboundClient, OutboundNetworkError, OutboundRefusedError, OutboundTimeoutError, OutboundTooLargeError, type Resolver } from "./outbound.js";

const MiB = 1024 * 1024;
const tls = {
  cert: readFileSync(new URL("./fixtures/tls/feed.test.crt", import.meta.url)),
  key: readFileSync(new URL("./fixtures/tls/feed.test.key", import.meta.url)),
};

const resolve: Resolver = async (hostname) => {
  const map: Record<string, string> = { "feed.test": "127.0.0.2", "other.test": "127.0.0.2", "evil.test": "127.0.0.1" };
  return map[hostname] ? [{ address: map[hostname], family: 4 }] : [];
};

interface Stats {
  /** Bytes the server managed to hand to the socket before the client went away. */
  written: number;
  /** gzip members written by the bomb endpoint. */
  members: number;
}
const stats: Stats = { written: 0, members: 0 };

type Res = ServerResponse | Http2ServerResponse;

/** Writes `chunk` until `limit` bytes or until the client goes away, honouring back-pressure. */
async function stream(res: Res, chunk: Buffer, limit: number, onChunk = () => {}): Promise<void> {
  while (stats.written < limit && !res.destroyed && !res.writableEnded) {
    stats.written += chunk.length;
    onChunk();
    if (!(res as ServerResponse).write(chunk)) {
      await new Promise<void>((done) => {
        const resume = () => {
          res.off("drain", resume);
          res.off("close", resume);
          done();
        };
        res.on("drain", resume);
        res.on("close", resume);
      });
    }
  }
  if (!res.destroyed) res.end();
}

const zeros = Buffer.alloc(64 * 1024);
// One gzip member of 16 MiB of zeros is about 16 KiB; members concatenated form one valid gzip body.
const bombMember = gzipSync(Buffer.alloc(16 * MiB), { level: 9 });

function handle(req: IncomingMessage | Http2ServerRequest, res: Res): void {
  const path = req.url ?? "/";
  if (path === "/version") return void res.end(req.httpVersion);
  if (path === "/huge") {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    return void stream(res, zeros, 100 * MiB);
  }
  if (path === "/huge-announced") {
    res.writeHead(200, { "content-length": String(100 * MiB) });
    return void stream(res, zeros, 100 * MiB);
  }
  if (path === "/bomb") {
    res.writeHead(200, { "content-encoding": "gzip" });
    return void stream(res, bombMember, Number.POSITIVE_INFINITY, () => stats.members++);
  }
  if (path === "/gzip") {
    res.writeHead(200, { "content-encoding": "gzip" });
    return void res.end(gzipSync("10.0.0.0/8\n"));
  }
  if (path === "/deflate") {
    res.writeHead(200, { "content-encoding": "deflate" });
    return void res.end(deflateSync("10.0.0.0/8\n"));
  }
  if (path === "/drip") {
    res.writeHead(200);
    const timer = setInterval(() => (res as ServerResponse).write("1"), 50);
    res.on("close", () => clearInterval(timer));
    return;
  }
  if (path === "/silent") return; // never answers
  if (path === "/sni") return void res.end(String((req.socket as { servername?: string }).servername));
  res.end("ok");
}

async function listening<S extends Server | ReturnType<typeof createH2cServer>>(server: S): Promise<{ server: S; port: number }> {
  await new Promise<void>((done) => server.listen(0, "127.0.0.2", done));
  return { server, port: (server.address() as AddressInfo).port };
}

let h1: { server: Server; port: number };
let h2c: { server: ReturnType<typeof createH2cServer>; port: number };
let h1s: { server: Server; port: number };
let h2s: { server: ReturnType<typeof createSecureServer>; port: number };
let h2cConnections = 0;

const client = createOutboundClient({ allowCidrs: ["127.0.0.2/32"], resolve, ca: tls.cert });

beforeAll(async () => {
  h1 = await listening(createServer(handle));
  h2c = await listening(createH2cServer(handle));
  h2c.server.on("connection", () => h2cConnections++);
  h1s = await listening(createHttpsServer(tls, handle));
  h2s = await listening(createSecureServer({ ...tls, allowHTTP1: true }, handle));
});

afterAll(async () => {
  await client.close();
  h1.server.closeAllConnections();
  h1s.server.closeAllConnections();
  for (const { server } of [h1, h2c, h1s, h2s]) await new Promise((done) => server.close(done));
});

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable("should fail"),
    (e: unknown) => e,
  );

describe("outbound client - limits", () => {
  it("aborts a streamed 100 MiB body at the 32 MiB default cap", async () => {
    stats.written = 0;
    const started = Date.now();
    const err = await failure(client.request(`http://feed.test:${h1.port}/huge`));
    expect(err).toBeInstanceOf(OutboundTooLargeError);
    expect(err).toMatchObject({ code: "outbound_too_large", maxBytes: 32 * MiB, url: `http://feed.test:${h1.port}/huge` });
    expect(Date.now() - started).toBeLessThan(5_000);
    // Give the server a moment to notice the closed socket, then check it stopped well short.
    await new Promise((done) => setTimeout(done, 50));
    expect(stats.written).toBeLessThan(48 * MiB);
  });

  it("refuses a body whose Content-Length is over the cap before reading it", async () => {
    stats.written = 0;
    const err = await failure(client.request(`http://feed.test:${h1.port}/huge-announced`, { maxBytes: MiB }));
    expect(err).toBeInstanceOf(OutboundTooLargeError);
    await new Promise((done) => setTimeout(done, 50));
    expect(stats.written).toBeLessThan(8 * MiB);
  });

  it("stops a gzip bomb early, counting the decompressed size", async () => {
    stats.members = 0;
    stats.written = 0;
    const err = await failure(client.request(`http://feed.test:${h1.port}/bomb`));
    expect(err).toBeInstanceOf(OutboundTooLargeError);
    await new Promise((done) => setTimeout(done, 50));
    // 32 MiB of output is 2-3 members; socket buffers let the server get somewhat further ahead.
    expect(stats.written).toBeLessThan(8 * MiB);
  });

  it("decodes gzip and deflate bodies and reports the bytes received", async () => {
    const gz = await client.request(`http://feed.test:${h1.port}/gzip`);
    expect(gz.body.toString()).toBe("10.0.0.0/8\n");
    expect(gz.fetchedBytes).toBe(gzipSync("10.0.0.0/8\n").length);
    const deflated = await client.request(`http://feed.test:${h1.port}/deflate`);
    expect(deflated.body.toString()).toBe("10.0.0.0/8\n");
  });

  it("aborts a slow drip at the total timeout", async () => {
    const started = Date.now();
    const err = await failure(client.request(`http://feed.test:${h1.port}/drip`, { timeoutMs: 300 }));
    expect(err).toBeInstanceOf(OutboundTimeoutError);
    expect(err).toMatchObject({ code: "outbound_timeout", timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("aborts a server that never answers at the total timeout", async () => {
    const err = await failure(client.request(`http://feed.test:${h1.port}/silent`, { timeoutMs: 200 }));
    expect(err).toBeInstanceOf(OutboundTimeoutError);
  });

  it.each([false, true])("cuts a hanging name resolution at the total timeout (http2: %s)", async (http2) => {
    const hanging = createOutboundClient({ resolve: () => new Promise(() => {}), timeoutMs: 200 });
    try {
      const err = await failure(hanging.request(`http://feed.test:${h2c.port}/`, { http2 }));
      expect(err).toBeInstanceOf(OutboundTimeoutError);
    } finally {
      await hanging.close();
    }
  });

  it("throws the caller's reason when its signal aborts", async () => {
    const reason = new Error("job cancelled");
    const err = await failure(client.request(`http://feed.test:${h1.port}/silent`, { signal: AbortSignal.abort(reason) }));
    expect(err).toBe(reason);
  });

  it("reports a closed port as a network error", async () => {
    const err = await failure(client.request("http://127.0.0.2:1/"));
    expect(err).toBeInstanceOf(OutboundNetworkError);
    expect(err).toMatchObject({ code: "outbound_network" });
  });
});

describe("outbound client - TLS", () => {
  it("connects to the checked address and verifies the certificate against the host name", async () => {
    const res = await client.request(`https://feed.test:${h1s.port}/sni`);
    expect(res.body.toString()).toBe("feed.test");
  });

  it("refuses a certificate that does not name the host", async () => {
    const err = await failure(client.request(`https://other.test:${h1s.port}/`));
    expect(err).toBeInstanceOf(OutboundNetworkError);
  });

  it("speaks HTTP/2 over TLS when asked", async () => {
    expect((await client.request(`https://feed.test:${h2s.port}/version`, { http2: true })).body.toString()).toBe("2.0");
    expect((await client.request(`https://feed.test:${h2s.port}/version`)).body.toString()).toBe("1.1");
  });
});

describe("outbound client - h2c", () => {
  it("speaks cleartext HTTP/2 with prior knowledge", async () => {
    const res = await client.request(`http://feed.test:${h2c.port}/version`, {
      http2: true,
      method: "POST",
      body: "query",
      headers: { "content-type": "application/dns-message" },
    });
    expect(res.body.toString()).toBe("2.0");
    expect(res.status).toBe(200);
  });

  it("checks the address before opening the HTTP/2 connection", async () => {
    const before = h2cConnections;
    const strict = createOutboundClient({ resolve });
    try {
      const err = await failure(strict.request(`http://feed.test:${h2c.port}/version`, { http2: true }));
      expect(err).toBeInstanceOf(OutboundRefusedError);
      expect(err).toMatchObject({ reason: "loopback", address: "127.0.0.2" });
      expect(h2cConnections).toBe(before);
    } finally {
      await strict.close();
    }
  });

  it("applies the body cap, gzip decoding and the timeout over h2c", async () => {
    const gz = await client.request(`http://feed.test:${h2c.port}/gzip`, { http2: true });
    expect(gz.body.toString()).toBe("10.0.0.0/8\n");
    const big = await failure(client.request(`http://feed.test:${h2c.port}/huge`, { http2: true, maxBytes: MiB }));
    expect(big).toBeInstanceOf(OutboundTooLargeError);
    const bomb = await failure(client.request(`http://feed.test:${h2c.port}/bomb`, { http2: true }));
    expect(bomb).toBeInstanceOf(OutboundTooLargeError);
    const slow = await failure(client.request(`http://feed.test:${h2c.port}/drip`, { http2: true, timeoutMs: 300 }));
    expect(slow).toBeInstanceOf(OutboundTimeoutError);
  });
});
