import * as dnsPacket from "dns-packet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonA, jsonCname, startJsonDohServer, startRawServer } from "../../../../test/helpers/doh-servers.js";
import { EXAMPLE_ZONE_HEAD, startUnbound, type UnboundServer, unboundMissing } from "../../../../test/helpers/unbound.js";
import { type DohProfileSpec, queryDoh } from "./doh-client.js";
import { DohMalformedError } from "./doh-errors.js";
import { createOutboundClient } from "./outbound.js";

const ZONE = `${EXAMPLE_ZONE_HEAD}www   IN CNAME cdn.example.test.
cdn   60 IN A 1.2.3.21
`;

const client = createOutboundClient({ allowCidrs: ["127.0.0.0/8", "::1/128"], timeoutMs: 5_000 });
const profile = (url: string, over: Partial<DohProfileSpec> = {}): DohProfileSpec => ({
  url,
  method: "GET",
  format: "wire",
  timeout_ms: 3_000,
  headers: {},
  ...over,
});
afterAll(() => client.close());

const missing = unboundMissing();

describe.skipIf(missing !== null)("queryDoh - wire format against unbound (h2c)", () => {
  let unbound: UnboundServer;
  beforeAll(async () => {
    unbound = await startUnbound({ zoneText: ZONE });
  });
  afterAll(() => unbound?.stop());

  it("queryDoh - GET answers A records with their TTL", async () => {
    const result = await queryDoh(client, profile(unbound.url), "example.test", "A");
    expect(result).toEqual({ rcode: "NOERROR", answers: [{ type: "A", name: "example.test", data: "1.2.3.4", ttl: 300 }] });
  });

  it("queryDoh - POST answers AAAA records in canonical form", async () => {
    const result = await queryDoh(client, profile(unbound.url, { method: "POST" }), "Example.Test.", "AAAA");
    expect(result.answers).toEqual([{ type: "AAAA", name: "example.test", data: "2606:4700::1111", ttl: 300 }]);
  });

  it("queryDoh - returns the CNAME chain with the target's addresses", async () => {
    const result = await queryDoh(client, profile(unbound.url), "www.example.test", "A");
    expect(result.answers).toEqual([
      { type: "CNAME", name: "www.example.test", data: "cdn.example.test", ttl: 300 },
      { type: "A", name: "cdn.example.test", data: "1.2.3.21", ttl: 60 },
    ]);
  });

  it("queryDoh - reports NXDOMAIN as the rcode, not as an error", async () => {
    const result = await queryDoh(client, profile(unbound.url), "nope.example.test", "A");
    expect(result).toEqual({ rcode: "NXDOMAIN", answers: [] });
  });

  it("queryDoh - reports REFUSED for names outside the zone", async () => {
    const result = await queryDoh(client, profile(unbound.url), "example.com", "A");
    expect(result.rcode).toBe("REFUSED");
  });
});

describe("queryDoh - dns-json format", () => {
  it("queryDoh - asks ?name=&type= and maps numeric types", async () => {
    const server = await startJsonDohServer((name) => ({
      Status: 0,
      Answer: [jsonCname(name, "edge.cdn.test"), jsonA("edge.cdn.test", "1.2.3.7"), { name: "x.", type: 46, TTL: 1, data: "sig" }],
    }));
    try {
      const result = await queryDoh(client, profile(server.url, { format: "json" }), "a.test", "A");
      expect(result).toEqual({
        rcode: "NOERROR",
        answers: [
          { type: "CNAME", name: "a.test", data: "edge.cdn.test", ttl: 60 },
          { type: "A", name: "edge.cdn.test", data: "1.2.3.7", ttl: 60 },
        ],
      });
      expect(server.requests).toEqual(["GET /resolve?name=a.test&type=A"]);
    } finally {
      await server.close();
    }
  });

  it("queryDoh - maps Status 3 to NXDOMAIN", async () => {
    const server = await startJsonDohServer(() => ({ Status: 3 }));
    try {
      expect(await queryDoh(client, profile(server.url, { format: "json" }), "a.test", "AAAA")).toEqual({ rcode: "NXDOMAIN", answers: [] });
    } finally {
      await server.close();
    }
  });

  it("queryDoh - refuses an A record whose data is not an IPv4 address", async () => {
    const server = await startJsonDohServer((name) => ({ Status: 0, Answer: [jsonA(name, "2606:4700::1")] }));
    try {
      await expect(queryDoh(client, profile(server.url, { format: "json" }), "a.test", "A")).rejects.toBeInstanceOf(DohMalformedError);
    } finally {
      await server.close();
    }
  });

  it("queryDoh - refuses an answer to another question", async () => {
    const server = await startRawServer("application/dns-json", '{"Status":0,"Question":[{"name":"a.test.","type":28}],"Answer":[]}');
    try {
      await expect(queryDoh(client, profile(server.url, { format: "json" }), "a.test", "A")).rejects.toThrow(/not a\.test A/);
    } finally {
      await server.close();
    }
  });

  it("queryDoh - refuses JSON without a Status", async () => {
    const server = await startRawServer("application/dns-json", '{"Answer":[]}');
    try {
      await expect(queryDoh(client, profile(server.url, { format: "json" }), "a.test", "A")).rejects.toMatchObject({ code: "doh_malformed" });
    } finally {
      await server.close();
    }
  });
});

describe("queryDoh - malformed wire answers", () => {
  const garbage = async (contentType: string, body: Buffer | string, message: RegExp) => {
    const server = await startRawServer(contentType, body);
    try {
      const err = await queryDoh(client, profile(server.url), "a.test", "A").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DohMalformedError);
      expect((err as Error).message).toMatch(message);
      // h2c was tried first and refused by this HTTP/1.1-only server; HTTP/1.1 got the answer.
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  };

  it("queryDoh - a body that is not a DNS message is a DohMalformedError", () =>
    garbage("application/dns-message", Buffer.from([1, 2, 3]), /not a DNS message/));

  it("queryDoh - an HTML page answered with 200 is a DohMalformedError", () => garbage("text/html", "<html>hello</html>", /expected application\/dns-message/));

  it("queryDoh - a response to another question is a DohMalformedError", () => {
    const other = dnsPacket.encode({ type: "response", id: 0, questions: [{ type: "A", name: "b.test", class: "IN" }], answers: [] });
    return garbage("application/dns-message", other, /answers b\.test A/);
  });

  it("queryDoh - a query echoed back is a DohMalformedError", () => {
    const query = dnsPacket.encode({ type: "query", id: 0, questions: [{ type: "A", name: "a.test", class: "IN" }] });
    return garbage("application/dns-message", query, /not a response/);
  });
});
