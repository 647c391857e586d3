// The address policy against real listeners: a refused request must never open a connection.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboundClient, OutboundHttpError, OutboundRefusedError, type Resolver } from "./outbound.js";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Listener {
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  requests: string[];
  server: Server;
}

async function listen(host: string, handler: Handler = (_req, res) => res.end("ok")): Promise<Listener> {
  const listener: Listener = { port: 0, connections: 0, requests: [], server: createServer() };
  listener.server.on("connection", () => listener.connections++);
  listener.server.on("request", (req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      listener.requests.push(`${req.method} ${req.url}`);
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => listener.server.listen(0, host, resolve));
  listener.port = (listener.server.address() as AddressInfo).port;
  return listener;
}

const close = (l: Listener) =>
  new Promise<void>((resolve) => {
    l.server.closeAllConnections();
    l.server.close(() => resolve());
  });

const names: Record<string, string[]> = {
  "evil.test": ["127.0.0.1"],
  "evil6.test": ["::1"],
  "mixed.test": ["93.184.215.14", "127.0.0.1"],
  "allowed.test": ["127.0.0.2"],
};
const resolve: Resolver = async (hostname) => (names[hostname] ?? []).map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

async function refusalOf(promise: Promise<unknown>): Promise<OutboundRefusedError> {
  const err = await promise.then(
    () => expect.unreachable("request should have been refused"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundRefusedError);
  return err as OutboundRefusedError;
}

let loop4: Listener; // 127.0.0.1, never allowed: every test expects 0 connections here
let loop6: Listener; // ::1, never allowed either
let allowed: Listener; // 127.0.0.2, the only allow-listed address

beforeAll(async () => {
  loop4 = await listen("127.0.0.1");
  loop6 = await listen("::1");
  allowed = await listen("127.0.0.2", (req, res, body) => {
    const url = new URL(req.url ?? "/", "http://x");
    const hops = /^\/hops\/(\d+)$/.exec(url.pathname);
    if (hops) {
      const left = Number(hops[1]);
      if (left === 0) return res.end("arrived");
      res.writeHead(302, { location: `/hops/${left - 1}` }).end();
      return;
    }
    if (url.pathname === "/to") {
      res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: url.searchParams.get("u")! }).end();
      return;
    }
    if (url.pathname === "/echo") {
      res.setHeader("content-type", "application/json");
      return res.end(JSON.stringify({ method: req.method, body, auth: req.headers.authorization ?? null }));
    }
    if (url.pathname === "/missing") return res.writeHead(404).end("no such feed");
    res.end("ok");
  });
});

afterAll(async () => {
  await Promise.all([loop4, loop6, allowed].map(close));
});

describe("outbound client - address policy", () => {
  const client = createOutboundClient({ allowCidrs: ["127.0.0.2/32"], resolve });
  afterAll(() => client.close());

  it.each([
    ["127.0.0.1", "loopback"],
    ["127.1", "loopback"],
    ["0x7f000001", "loopback"],
    ["2130706433", "loopback"],
    ["017700000001", "loopback"],
    ["[::ffff:127.0.0.1]", "loopback"],
    ["[::ffff:7f00:1]", "loopback"],
    ["169.254.169.254", "metadata"],
    ["100.64.0.1", "cgnat"],
    ["[fc00::1]", "unique_local"],
    ["[fe80::1]", "link_local"],
    ["0.0.0.0", "unspecified"],
  ])("refuses http://%s/ (%s) without connecting", async (host, reason) => {
    const err = await refusalOf(client.request(`http://${host}:${loop4.port}/`));
    expect(err.reason).toBe(reason);
    expect(loop4.connections).toBe(0);
  });

  it("refuses http://[::1]/ without connecting", async () => {
    const err = await refusalOf(client.request(`http://[::1]:${loop6.port}/`));
    expect(err).toMatchObject({ code: "outbound_refused", reason: "loopback", address: "::1" });
    expect(loop6.connections).toBe(0);
  });

  it("refuses a host name that resolves to a private address, at connect time", async () => {
    const err = await refusalOf(client.request(`http://evil.test:${loop4.port}/`));
    expect(err).toMatchObject({ reason: "loopback", address: "127.0.0.1", url: `http://evil.test:${loop4.port}/` });
    await refusalOf(client.request(`http://evil6.test:${loop6.port}/`));
    expect(loop4.connections).toBe(0);
    expect(loop6.connections).toBe(0);
  });

  it("refuses a host name when any one of its addresses is refused", async () => {
    const err = await refusalOf(client.request(`http://mixed.test:${loop4.port}/`));
    expect(err.address).toBe("127.0.0.1");
    expect(loop4.connections).toBe(0);
  });

  it.each(["file:///etc/passwd", "gopher://127.0.0.2:70/_GET", "ftp://allowed.test/"])("refuses %s", async (url) => {
    expect((await refusalOf(client.request(url))).reason).toBe("scheme");
  });

  it("refuses credentials in the URL", async () => {
    const err = await refusalOf(client.request(`http://user:pw@127.0.0.2:${allowed.port}/`));
    expect(err.reason).toBe("credentials");
  });

  it("refuses a redirect from an allowed server to a refused literal address", async () => {
    const before = allowed.requests.length;
    const target = encodeURIComponent(`http://127.0.0.1:${loop4.port}/`);
    const err = await refusalOf(client.request(`http://127.0.0.2:${allowed.port}/to?u=${target}`));
    expect(err).toMatchObject({ reason: "loopback", url: `http://127.0.0.1:${loop4.port}/` });
    expect(allowed.requests.length).toBe(before + 1);
    expect(loop4.connections).toBe(0);
  });

  it("refuses a redirect to a host name that resolves to a refused address", async () => {
    const target = encodeURIComponent(`http://evil.test:${loop4.port}/`);
    const err = await refusalOf(client.request(`http://allowed.test:${allowed.port}/to?u=${target}&status=307`));
    expect(err).toMatchObject({ reason: "loopback", address: "127.0.0.1" });
    expect(loop4.connections).toBe(0);
  });

  it("refuses a redirect to another scheme", async () => {
    const target = encodeURIComponent("file:///etc/passwd");
    const err = await refusalOf(client.request(`http://127.0.0.2:${allowed.port}/to?u=${target}`));
    expect(err.reason).toBe("scheme");
  });

  it("follows 5 redirects and refuses the 6th", async () => {
    const res = await client.request(`http://allowed.test:${allowed.port}/hops/5`);
    expect(res.body.toString()).toBe("arrived");
    expect(res.url).toBe(`http://allowed.test:${allowed.port}/hops/0`);

    const before = allowed.requests.length;
    const err = await refusalOf(client.request(`http://allowed.test:${allowed.port}/hops/6`));
    expect(err.reason).toBe("too_many_redirects");
    expect(allowed.requests.slice(before)).toEqual(["GET /hops/6", "GET /hops/5", "GET /hops/4", "GET /hops/3", "GET /hops/2", "GET /hops/1"]);
  });

  it("turns a POST into a GET on 303 and keeps method and body on 307", async () => {
    const post = { method: "POST", body: "payload", headers: { "content-type": "text/plain" } };
    const on303 = await client.request(`http://127.0.0.2:${allowed.port}/to?status=303&u=/echo`, post);
    expect(JSON.parse(on303.body.toString())).toMatchObject({ method: "GET", body: "" });
    const on307 = await client.request(`http://127.0.0.2:${allowed.port}/to?status=307&u=/echo`, post);
    expect(JSON.parse(on307.body.toString())).toMatchObject({ method: "POST", body: "payload" });
  });

  it("drops Authorization when a redirect leaves the origin", async () => {
    const headers = { authorization: "Bearer t" };
    const sameOrigin = await client.request(`http://127.0.0.2:${allowed.port}/to?u=/echo`, { headers });
    expect(JSON.parse(sameOrigin.body.toString()).auth).toBe("Bearer t");
    const target = encodeURIComponent(`http://allowed.test:${allowed.port}/echo`);
    const otherOrigin = await client.request(`http://127.0.0.2:${allowed.port}/to?u=${target}`, { headers });
    expect(JSON.parse(otherOrigin.body.toString()).auth).toBeNull();
  });

  it("answers a non-2xx status with OutboundHttpError", async () => {
    const err = await client.request(`http://127.0.0.2:${allowed.port}/missing`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundHttpError);
    expect(err).toMatchObject({ code: "outbound_http_status", status: 404, bodySnippet: "no such feed" });
  });

  it("checks a URL's form for save-time validation with the client's allow-list", () => {
    expect(client.checkUrlForm(`http://127.0.0.2:${allowed.port}/`).hostname).toBe("127.0.0.2");
    expect(() => client.checkUrlForm("http://127.1/")).toThrow(OutboundRefusedError);
  });
});

describe("outbound client - allow-list", () => {
  it("reaches loopback listeners only when allowCidrs includes them", async () => {
    const closed = createOutboundClient({ resolve });
    const open = createOutboundClient({ resolve, allowCidrs: ["127.0.0.1/32", "::1/128"] });
    try {
      await refusalOf(closed.request(`http://127.0.0.1:${loop4.port}/`));
      await refusalOf(closed.request(`http://[::1]:${loop6.port}/`));
      expect(loop4.connections + loop6.connections).toBe(0);

      expect((await open.request(`http://127.0.0.1:${loop4.port}/`)).body.toString()).toBe("ok");
      expect((await open.request(`http://[::1]:${loop6.port}/`)).body.toString()).toBe("ok");
      expect((await open.request(`http://evil.test:${loop4.port}/`)).status).toBe(200);
      expect(loop4.connections).toBeGreaterThan(0);
      expect(loop6.connections).toBeGreaterThan(0);
    } finally {
      await Promise.all([closed.close(), open.close()]);
      loop4.connections = 0;
      loop6.connections = 0;
    }
  });

  it("lets a trusted request reach its own origin, but checks a redirect elsewhere", async () => {
    const client = createOutboundClient({ resolve });
    try {
      const res = await client.request(`http://127.0.0.2:${allowed.port}/`, { trusted: true });
      expect(res.body.toString()).toBe("ok");
      const target = encodeURIComponent(`http://127.0.0.1:${loop4.port}/`);
      const err = await refusalOf(client.request(`http://127.0.0.2:${allowed.port}/to?u=${target}`, { trusted: true }));
      expect(err.reason).toBe("loopback");
      expect(loop4.connections).toBe(0);
    } finally {
      await client.close();
    }
  });
});
