import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../../../test/helpers/db.js";
import type { IngestModuleRow } from "../../db/ingest-inputs.js";
import type { SecretBox } from "../../lib/secret-box.js";
import type { AsnSource } from "../../sources/asn-source.js";
import type { OutboundClient } from "../../sources/outbound.js";
import { type CollectDeps, collectedPrefixes, collectModule } from "./collect.js";

let database: TestDatabase;
let sql: postgres.Sql;
const tenantId = randomUUID();
const now = new Date("2026-03-01T12:00:00Z");

beforeAll(async () => {
  database = await createTestDatabase();
  sql = postgres(database.url, { max: 2, onnotice: () => {} });
  await sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenantId}, 'collect', ${now})`;
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await database?.drop();
});

/** An AS_PREFIXES module with these ASNs and IP ranges, and the snapshot groups it already had. */
async function asModule(asns: number[], cidrs: string[], previous: { origin: string; prefixes: string[] }[] = []): Promise<IngestModuleRow> {
  const id = randomUUID();
  await sql`INSERT INTO modules (id, tenant_id, name, type, doh_resolver_policy, created_at, updated_at)
            VALUES (${id}, ${tenantId}, ${`m-${id}`}, 'AS_PREFIXES', '{}', ${now}, ${now})`;
  for (const asn of asns) {
    await sql`INSERT INTO as_entries (id, tenant_id, module_id, asn, created_at, updated_at) VALUES (${randomUUID()}, ${tenantId}, ${id}, ${asn}, ${now}, ${now})`;
  }
  for (const cidr of cidrs) {
    await sql`INSERT INTO ip_range_entries (id, tenant_id, module_id, cidr, network, created_at, updated_at)
              VALUES (${randomUUID()}, ${tenantId}, ${id}, ${cidr}, ${cidr}, ${now}, ${now})`;
  }
  for (const g of previous) {
    await sql`INSERT INTO snapshots (tenant_id, module_id, source, origin, prefixes) VALUES (${tenantId}, ${id}, 'asn', ${g.origin}, ${g.prefixes}::text[])`;
  }
  const [row] = await sql<IngestModuleRow[]>`
    SELECT id, name, type, enabled, NULL::text AS community, doh_resolver_policy, collected_at, refresh_interval_minutes, last_refreshed_at
    FROM modules WHERE id = ${id}`;
  return row!;
}

/** An ASN source that knows some ASNs and fails on the others, as a feed that is down. */
function asnSource(known: Record<number, string[]>): AsnSource {
  return {
    async announcedPrefixes(asn: number) {
      const prefixes = known[asn];
      if (!prefixes) throw new Error(`AS${asn}: feed unreachable`);
      return prefixes;
    },
  } as AsnSource;
}

const depsWith = (source: AsnSource | null): CollectDeps => ({
  // No CDN source and no domain here: a request would be a bug in the test's premise.
  outbound: {} as OutboundClient,
  asnSource: source,
  services: { secretBox: {} as SecretBox },
});

describe("collecting a module", () => {
  it("takes each ASN's announced prefixes and the module's own ranges", async () => {
    const module = await asModule([64500, 64501], ["192.0.2.0/24"]);
    const got = await collectModule(
      sql,
      depsWith(asnSource({ 64500: ["198.51.100.0/24"], 64501: ["2001:db8::/32"] })),
      module,
      now,
      new AbortController().signal,
    );
    expect(got).toMatchObject({ sources_ok: 2, sources_failed: 0, warnings: [] });
    expect(collectedPrefixes(got).sort()).toEqual(["192.0.2.0/24", "198.51.100.0/24", "2001:db8::/32"]);
  });

  it("keeps a failing ASN's prefixes of the last snapshot and warns, without failing the other sources", async () => {
    const module = await asModule([64500, 64501], [], [{ origin: "64501", prefixes: ["203.0.113.0/24"] }]);
    const got = await collectModule(sql, depsWith(asnSource({ 64500: ["198.51.100.0/24"] })), module, now, new AbortController().signal);
    expect(got).toMatchObject({ sources_ok: 1, sources_failed: 1 });
    expect(got.warnings).toEqual([{ module_id: module.id, source: "asn:64501", message: "AS64501: feed unreachable" }]);
    expect(collectedPrefixes(got).sort()).toEqual(["198.51.100.0/24", "203.0.113.0/24"]);
  });

  it("drops a failing ASN that never gave prefixes: there is nothing to keep", async () => {
    const module = await asModule([64502], []);
    const got = await collectModule(sql, depsWith(asnSource({})), module, now, new AbortController().signal);
    expect(got).toMatchObject({ sources_ok: 0, sources_failed: 1, groups: [] });
  });

  it("reports an ASN module without an ASN source configured, naming the setting", async () => {
    const module = await asModule([64500], []);
    const got = await collectModule(sql, depsWith(null), module, now, new AbortController().signal);
    expect(got.warnings[0]?.message).toContain("ASN_SOURCE");
  });
});
