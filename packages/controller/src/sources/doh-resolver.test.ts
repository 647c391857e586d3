import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonA, jsonCname, startJsonDohServer } from "../../../../test/helpers/doh-servers.js";
import { EXAMPLE_ZONE_HEAD, startUnbound, type UnboundServer, unboundMissing } from "../../../../test/helpers/unbound.js";
import type { DohProfileSpec } from "./doh-client.js";
import { type DohResolverPolicy, type DomainRecord, resolveDomains } from "./doh-resolver.js";
import { createOutboundClient } from "./outbound.js";

// Public-looking addresses: documentation ranges (192.0.2.0/24, 2001:db8::/32) are dropped.
const zone = (cdn: string[]) => `${EXAMPLE_ZONE_HEAD}v4only  IN A    1.2.3.6
www     IN CNAME alias.example.test.
alias   IN CNAME cdn.example.test.
${cdn.map((a) => `cdn 60 IN ${a.includes(":") ? "AAAA" : "A"} ${a}`).join("\n")}
mixed   IN A    10.0.0.1
mixed   IN A    192.0.2.10
mixed   IN A    100.64.0.1
mixed   IN A    1.2.3.5
mixed   IN AAAA 2001:db8::1
mixed   IN AAAA fe80::1
mixed   IN AAAA 2606:4700::5
loop1   IN CNAME loop2.example.test.
loop2   IN CNAME loop1.example.test.
`;

const client = createOutboundClient({ allowCidrs: ["127.0.0.0/8", "::1/128"], timeoutMs: 5_000 });
afterAll(() => client.close());
const deps = { client };
const wire = (url: string): DohProfileSpec => ({ url, method: "GET", format: "wire", timeout_ms: 3_000, headers: {} });
const json = (url: string): DohProfileSpec => ({ url, method: "GET", format: "json", timeout_ms: 3_000, headers: {} });
const policy = (over: Partial<DohResolverPolicy> = {}): DohResolverPolicy => ({
  strategy: "failover",
  record_types: ["A", "AAAA"],
  timeout_ms: 2_000,
  attempts: 1,
  keep_previous_minutes: 0,
  ...over,
});
const T0 = new Date("2026-11-22T10:00:00.000Z");
const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);
const domains = (...names: string[]) => names.map((name) => ({ name, include_subdomains: false }));
/** resolveDomains of `names` from `profiles` with the test policy, nothing previous, at T0; `over` changes any of it. */
const resolve = (profiles: DohProfileSpec[], names: string[], over: Partial<Parameters<typeof resolveDomains>[1]> = {}) =>
  resolveDomains(deps, { domains: domains(...names), profiles, policy: policy(), previous: [], now: T0, ...over });
// Nothing listens there: connections are refused at once.
const DEAD = "http://127.0.0.1:9/dns-query";

const missing = unboundMissing();

describe.skipIf(missing !== null)("resolveDomains - against unbound", () => {
  let unbound: UnboundServer;
  let second: UnboundServer;
  beforeAll(async () => {
    [unbound, second] = await Promise.all([
      startUnbound({ zoneText: zone(["1.2.3.21", "1.2.3.22", "2606:4700::21"]) }),
      startUnbound({ zoneText: zone(["5.6.7.8"]) }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([unbound?.stop(), second?.stop()]);
  });

  it("resolveDomains - collects A and AAAA answers as bare addresses seen now", async () => {
    // include_subdomains is resolved as the name itself: a wildcard cannot be listed.
    const result = await resolve([wire(unbound.url)], [], { domains: [{ name: "Example.Test.", include_subdomains: true }] });
    expect(result.records).toEqual([
      { domain: "example.test", address: "1.2.3.4", last_seen_at: T0 },
      { domain: "example.test", address: "2606:4700::1111", last_seen_at: T0 },
    ]);
    expect(result.perDomain).toEqual([{ domain: "example.test", ok: true, addresses: ["1.2.3.4", "2606:4700::1111"], dropped: [] }]);
  });

  it("resolveDomains - asks only the record types of the policy", async () => {
    const result = await resolve([wire(unbound.url)], ["example.test"], {
      policy: policy({ record_types: ["AAAA"] }),
      previous: [{ domain: "example.test", address: "1.2.3.4", last_seen_at: T0 }],
    });
    expect(result.records.map((r) => r.address)).toEqual(["2606:4700::1111"]);
  });

  it("resolveDomains - follows a CNAME chain to the addresses at its end", async () => {
    const result = await resolve([wire(unbound.url)], ["www.example.test"]);
    expect(result.perDomain[0]?.addresses).toEqual(["1.2.3.21", "1.2.3.22", "2606:4700::21"]);
  });

  it("resolveDomains - a CNAME loop fails the domain", async () => {
    const result = await resolve([wire(unbound.url)], ["loop1.example.test"], { policy: policy({ record_types: ["A"] }) });
    expect(result.perDomain[0]).toMatchObject({ ok: false, addresses: [] });
    expect(result.perDomain[0]?.error).toMatch(/^A: /);
  });

  it("resolveDomains - NXDOMAIN fails the domain, keeps its previous records and spares the others", async () => {
    const old = { domain: "gone.example.test", address: "1.2.3.99", last_seen_at: minutes(-10_000) };
    const result = await resolve([wire(unbound.url)], ["gone.example.test", "v4only.example.test"], {
      policy: policy({ record_types: ["A"] }),
      previous: [old],
    });
    expect(result.perDomain[0]).toMatchObject({ domain: "gone.example.test", ok: false, addresses: [] });
    expect(result.perDomain[0]?.error).toMatch(/NXDOMAIN for gone\.example\.test \(doh_rcode\)/);
    expect(result.perDomain[1]).toMatchObject({ domain: "v4only.example.test", ok: true, addresses: ["1.2.3.6"] });
    expect(result.records).toEqual([old, { domain: "v4only.example.test", address: "1.2.3.6", last_seen_at: T0 }]);
  });

  it("resolveDomains - drops private, CGNAT, documentation and link-local answers", async () => {
    const result = await resolve([wire(unbound.url)], ["mixed.example.test"]);
    expect(result.perDomain[0]).toEqual({
      domain: "mixed.example.test",
      ok: true,
      addresses: ["1.2.3.5", "2606:4700::5"],
      dropped: ["10.0.0.1", "100.64.0.1", "192.0.2.10", "2001:db8::1", "fe80::1"],
    });
  });

  it("resolveDomains - keeps rotated-out addresses for keep_previous_minutes after they were last seen", async () => {
    const run = (now: Date, previous: DomainRecord[]) =>
      resolve([wire(unbound.url)], ["www.example.test"], { policy: policy({ record_types: ["A"], keep_previous_minutes: 30 }), previous, now });
    try {
      const first = await run(T0, []);
      expect(first.records.map((r) => r.address)).toEqual(["1.2.3.21", "1.2.3.22"]);

      await unbound.reloadZone(zone(["1.2.3.22", "1.2.3.23"]));
      const second = await run(minutes(10), first.records);
      expect(second.records).toEqual([
        { domain: "www.example.test", address: "1.2.3.21", last_seen_at: T0 },
        { domain: "www.example.test", address: "1.2.3.22", last_seen_at: minutes(10) },
        { domain: "www.example.test", address: "1.2.3.23", last_seen_at: minutes(10) },
      ]);
      expect(second.perDomain[0]?.addresses).toEqual(["1.2.3.22", "1.2.3.23"]);

      // 31 minutes after T0, the refresh that last saw .21: it goes.
      const third = await run(minutes(31), second.records);
      expect(third.records.map((r) => r.address)).toEqual(["1.2.3.22", "1.2.3.23"]);
    } finally {
      await unbound.reloadZone(zone(["1.2.3.21", "1.2.3.22", "2606:4700::21"]));
    }
  });

  it("resolveDomains - failover skips a broken and a dead profile and answers from the next", async () => {
    const result = await resolve([wire("not a url"), wire(DEAD), wire(unbound.url)], ["example.test"], { policy: policy({ attempts: 2 }) });
    expect(result.perDomain[0]).toMatchObject({ ok: true, addresses: ["1.2.3.4", "2606:4700::1111"] });
  });

  it("resolveDomains - a domain whose every profile fails keeps its previous records whole", async () => {
    const previous = [
      { domain: "example.test", address: "1.2.3.4", last_seen_at: minutes(-5_000) },
      { domain: "example.test", address: "2606:4700::1111", last_seen_at: minutes(-5_000) },
      { domain: "removed.test", address: "1.2.3.1", last_seen_at: T0 },
    ];
    const result = await resolve([wire(DEAD)], ["example.test"], { previous });
    expect(result.records).toEqual(previous.slice(0, 2));
    expect(result.perDomain[0]?.ok).toBe(false);
    expect(result.perDomain[0]?.error).toMatch(/^A: 127\.0\.0\.1:9: .*\(outbound_network\); AAAA: /);
  });

  it("resolveDomains - race answers from the fastest profile and abandons the slow one", async () => {
    const slow = await startJsonDohServer((name) => ({ delayMs: 5_000, answer: { Status: 0, Answer: [jsonA(name, "9.9.9.9")] } }));
    try {
      const started = performance.now();
      const result = await resolve([json(slow.url), wire(unbound.url)], ["example.test"], {
        policy: policy({ strategy: "race", record_types: ["A"], timeout_ms: 10_000 }),
      });
      expect(result.perDomain[0]?.addresses).toEqual(["1.2.3.4"]);
      expect(performance.now() - started).toBeLessThan(2_000);
      await expect.poll(() => slow.abandoned).toBe(1);
    } finally {
      await slow.close();
    }
  });

  it("resolveDomains - union merges the answers of two servers", async () => {
    const result = await resolve([wire(unbound.url), { ...wire(second.url), method: "POST" }, wire(DEAD)], ["cdn.example.test"], {
      policy: policy({ strategy: "union", record_types: ["A"] }),
    });
    expect(result.perDomain[0]).toMatchObject({ ok: true, addresses: ["1.2.3.21", "1.2.3.22", "5.6.7.8"] });
  });
});

describe("resolveDomains - against a dns-json server", () => {
  it("resolveDomains - asks the CNAME target again when the server answered only the alias", async () => {
    const server = await startJsonDohServer((name) => {
      if (name === "a.test") return { Status: 0, Answer: [jsonCname("a.test", "b.test")] };
      if (name === "b.test") return { Status: 0, Answer: [jsonCname("b.test", "c.test")] };
      if (name === "c.test") return { Status: 0, Answer: [jsonA("c.test", "1.2.3.9")] };
      return { Status: 3 };
    });
    try {
      const result = await resolve([json(server.url)], ["a.test"], { policy: policy({ record_types: ["A"] }) });
      expect(result.perDomain[0]).toMatchObject({ ok: true, addresses: ["1.2.3.9"] });
      expect(server.requests).toEqual(["GET /resolve?name=a.test&type=A", "GET /resolve?name=b.test&type=A", "GET /resolve?name=c.test&type=A"]);
    } finally {
      await server.close();
    }
  });

  it("resolveDomains - stops a CNAME chain longer than 8 hops", async () => {
    const server = await startJsonDohServer((name) => {
      const n = Number(name.split(".")[0]!.slice(1));
      return { Status: 0, Answer: [jsonCname(name, `h${n + 1}.test`)] };
    });
    try {
      const result = await resolve([json(server.url)], ["h0.test"], { policy: policy({ record_types: ["A"] }) });
      expect(result.perDomain[0]?.error).toMatch(/longer than 8 \(doh_cname_chain\)/);
      expect(server.requests).toHaveLength(9);
    } finally {
      await server.close();
    }
  });

  it("resolveDomains - tries a profile again after an HTTP 503, up to attempts", async () => {
    let calls = 0;
    const server = await startJsonDohServer((name) => (++calls === 1 ? { status: 503 } : { Status: 0, Answer: [jsonA(name, "1.2.3.10")] }));
    try {
      const once = await resolve([json(server.url)], ["a.test"], { policy: policy({ record_types: ["A"], attempts: 1 }) });
      expect(once.perDomain[0]?.error).toMatch(/HTTP 503 \(outbound_http_status\)/);
      calls = 0;
      const twice = await resolve([json(server.url)], ["a.test"], { policy: policy({ record_types: ["A"], attempts: 2 }) });
      expect(twice.perDomain[0]).toMatchObject({ ok: true, addresses: ["1.2.3.10"] });
    } finally {
      await server.close();
    }
  });

  it("resolveDomains - resolves many domains with bounded concurrency, each on its own", async () => {
    const server = await startJsonDohServer((name) => {
      const n = Number(name.split(".")[0]!.slice(1));
      return n % 7 === 0 ? { Status: 2 } : { delayMs: 20, answer: { Status: 0, Answer: [jsonA(name, `1.2.${n}.1`)] } };
    });
    try {
      const names = Array.from({ length: 40 }, (_, i) => `d${i}.test`);
      const result = await resolveDomains(
        { client, concurrency: 4 },
        { domains: domains(...names), profiles: [json(server.url)], policy: policy({ record_types: ["A"] }), previous: [], now: T0 },
      );
      expect(result.perDomain.filter((d) => !d.ok).map((d) => d.domain)).toEqual(["d0.test", "d7.test", "d14.test", "d21.test", "d28.test", "d35.test"]);
      expect(result.records).toHaveLength(34);
      expect(server.mostInFlight).toBe(4);
    } finally {
      await server.close();
    }
  });
});
