import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, startTestController, type TestController } from "../helpers/controller.js";
import { EXAMPLE_ZONE_HEAD, startUnbound, type UnboundServer, unboundMissing } from "../helpers/unbound.js";

// Public-looking addresses: the default bogon filter drops documentation ranges.
const zone = (cdn: string[]) => `${EXAMPLE_ZONE_HEAD}www     IN CNAME alias.example.test.
alias   IN CNAME cdn.example.test.
${cdn.map((a) => `cdn 60 IN ${a.includes(":") ? "AAAA" : "A"} ${a}`).join("\n")}
`;

const missing = unboundMissing();
let unbound: UnboundServer;
let t: TestController;
const clock = manualClock(new Date());

beforeAll(async () => {
  if (missing) return;
  unbound = await startUnbound({ zoneText: zone(["5.6.7.1", "2606:4700::21"]) });
  t = await startTestController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" }, clock });
});
afterAll(async () => {
  await t?.close();
  await unbound?.stop();
});

describe.skipIf(missing !== null)("DOMAINS modules through a real DoH server (unbound)", () => {
  it("resolves A, AAAA and CNAME chains into the revision, keeps rotated answers for keep_previous_minutes, and looks domains up", async () => {
    const call = (method: "GET" | "POST" | "PATCH", url: string, payload?: object) => t.call(t.rootKey, { method, url, ...(payload ? { payload } : {}) });
    const profile = await call("POST", "/v1/doh-profiles", { name: "local unbound", url: unbound.url, method: "GET", format: "wire", timeout_ms: 3000 });
    expect(profile.statusCode, profile.body).toBe(201);
    const community = (await call("POST", "/v1/communities", { community: "65000:300", title: "via-dns" })).json().id;
    const mod = await call("POST", "/v1/modules", {
      name: "dns-list",
      type: "DOMAINS",
      community_id: community,
      doh_profile_ids: [profile.json().id],
      doh_resolver_policy: { strategy: "failover", record_types: ["A", "AAAA"], timeout_ms: 3000, attempts: 1, keep_previous_minutes: 30 },
    });
    expect(mod.statusCode, mod.body).toBe(201);
    const id = mod.json().id;
    await call("POST", `/v1/modules/${id}/domain-entries`, { domain: "example.test" });
    await call("POST", `/v1/modules/${id}/domain-entries`, { domain: "www.example.test" });

    const first = await call("POST", `/v1/modules/${id}/refresh?wait=true`);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().result.warnings).toEqual([]);
    const prefixes = async (rev: number) => (await call("GET", `/v1/revisions/${rev}/prefixes?limit=500`)).json().items.map((p: any) => p.prefix);
    expect(await prefixes(first.json().result.revision_id)).toEqual(["1.2.3.4/32", "5.6.7.1/32", "2606:4700::21/128", "2606:4700::1111/128"]);

    // The CDN name rotates to another address: the old one stays for keep_previous_minutes.
    await unbound.reloadZone(zone(["5.6.7.2", "2606:4700::21"]));
    clock.advance(10 * 60_000);
    const second = await call("POST", `/v1/modules/${id}/refresh?wait=true`);
    expect(await prefixes(second.json().result.revision_id)).toEqual(["1.2.3.4/32", "5.6.7.1/32", "5.6.7.2/32", "2606:4700::21/128", "2606:4700::1111/128"]);
    // One snapshot row per domain, with when each address was last seen beside it.
    const rows = await t.controller.db.sql<{ origin: string; prefixes: string[]; seen: string[] }[]>`
      SELECT origin, prefixes, ARRAY(SELECT to_char(s AT TIME ZONE 'UTC', 'HH24:MI') FROM unnest(seen_at) AS s) AS seen
      FROM snapshots WHERE module_id = ${id} AND source = 'domain' ORDER BY origin`;
    const at = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    const seen = Object.fromEntries(rows.map((r) => [r.origin, Object.fromEntries(r.prefixes.map((p, i) => [p, r.seen[i]]))]));
    expect(seen).toEqual({
      "example.test": { "1.2.3.4/32": at(clock.now()), "2606:4700::1111/128": at(clock.now()) },
      "www.example.test": {
        "5.6.7.1/32": at(clock.now() - 10 * 60_000),
        "5.6.7.2/32": at(clock.now()),
        "2606:4700::21/128": at(clock.now()),
      },
    });
    clock.advance(31 * 60_000);
    const third = await call("POST", `/v1/modules/${id}/refresh?wait=true`);
    expect(await prefixes(third.json().result.revision_id)).toEqual(["1.2.3.4/32", "5.6.7.2/32", "2606:4700::21/128", "2606:4700::1111/128"]);

    const look = (await call("GET", "/v1/lookup?q=WWW.Example.Test.")).json();
    expect(look).toMatchObject({ kind: "domain", normalized: "www.example.test", matched: true, revision: null });
    expect(look.matches).toEqual([
      expect.objectContaining({ layer: "entry", value: "www.example.test", community: "65000:300" }),
      expect.objectContaining({ layer: "snapshot", source: "domain", addresses: ["5.6.7.2", "2606:4700::21"] }),
    ]);
  });
});
