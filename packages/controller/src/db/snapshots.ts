import type { Db, Tx } from "./connect.js";

export type SnapshotSource = "asn" | "domain" | "ip_range" | "cdn" | "country";

/** What one source of a module gave: one row of `snapshots`. */
export interface SnapshotGroup {
  source: SnapshotSource;
  origin: string;
  prefixes: string[];
  /** DOMAINS: when each address was last returned (epoch ms, parallel to prefixes); else null. */
  seen_at: number[] | null;
  /** The AS-SET an `asn` group's ASN is a member of; absent (stored '') for an ASN entered as itself. */
  via?: string;
  /**
   * When the source last gave these prefixes (epoch ms): read from the stored row (null for rows
   * written before it was kept), absent on a group collected just now; written as given, or as
   * the time of the write when absent.
   */
  refreshed_at?: number | null;
}

// Arrays travel as one joined text each and are split by the other side (string_to_array,
// array_to_string): postgres.js's array literal parser is ~10x slower on a 850k-element array
// than one String#split, and writing needs no escaping since prefixes hold no space or quote.
// Statements carry at most ~1 MB of prefix text, and at most three are under way at once: the
// server splits and stores one while this process joins the next (a full refresh writes ~20 MB,
// ~0.65 s of the server's time and ~0.3 s of this process's), and neither side holds much more.
// The server stores each array lz4-compressed where it has lz4 (migration 0029: ~4x less in the
// table and the WAL), uncompressed otherwise (the embedded database).
const CHUNK_CHARS = 1_000_000;
const IN_FLIGHT = 3;

const splitText = (text: string | null, sep: string): string[] => (text ? text.split(sep) : []);

/** A module's snapshot as replaceSnapshots writes it: one row per group. */
export interface ModuleSnapshot {
  module_id: string;
  groups: readonly SnapshotGroup[];
}

/** Replaces a module's snapshot: one row per group, in a few multi-row statements. */
export async function replaceModuleSnapshot(db: Tx, tenantId: string, moduleId: string, groups: readonly SnapshotGroup[], now: Date): Promise<void> {
  await replaceSnapshots(db, tenantId, [{ module_id: moduleId, groups }], now);
}

/**
 * Replaces the snapshots of several modules of a tenant: one DELETE, then their rows in
 * statements of ~1 MB of prefixes, sent as they are built (three at most under way), the
 * DELETE's round trip not waited for: `db` is a transaction (on a pool, an INSERT could run
 * before the DELETE on another connection), whose statements run in the order sent.
 */
export async function replaceSnapshots(db: Tx, tenantId: string, snapshots: readonly ModuleSnapshot[], now: Date): Promise<void> {
  if (!snapshots.length) return;
  let chunk: { module: string; source: string; origin: string; via: string; prefixes: string; seen: string | null; refreshed: string }[] = [];
  let chars = 0;
  const pending: Promise<unknown>[] = [];
  let failure: { reason: unknown } | null = null;
  const hold = (statement: PromiseLike<unknown>) =>
    pending.push(
      Promise.resolve(statement).catch((reason: unknown) => {
        failure ??= { reason };
      }),
    );
  hold(db`DELETE FROM snapshots WHERE module_id = ANY(${snapshots.map((s) => s.module_id)}::uuid[])`);
  const flush = async () => {
    if (!chunk.length) return;
    const rows = chunk;
    chunk = [];
    chars = 0;
    // IN_FLIGHT under way at most: wait for the oldest before sending another.
    if (pending.length >= IN_FLIGHT) await pending.shift();
    if (failure) return;
    const insert = Promise.resolve(db`
      INSERT INTO snapshots (tenant_id, module_id, source, origin, via, prefixes, seen_at, refreshed_at)
      SELECT ${tenantId}::uuid, m::uuid, s, o, v, string_to_array(p, ' '), string_to_array(t, ' ')::timestamptz[], r::timestamptz
      FROM unnest(${rows.map((r) => r.module)}::text[], ${rows.map((r) => r.source)}::text[], ${rows.map((r) => r.origin)}::text[], ${rows.map((r) => r.via)}::text[],
                  ${rows.map((r) => r.prefixes)}::text[], ${rows.map((r) => r.seen)}::text[], ${rows.map((r) => r.refreshed)}::text[]) AS x(m, s, o, v, p, t, r)`);
    // Held here, so that a failure waits for the rest rather than going unhandled; the first is thrown.
    hold(insert);
    // The statement goes out (postgres.js sends it a tick after it is awaited) before the next is built.
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  for (const s of snapshots) {
    for (const g of s.groups) {
      const prefixes = g.prefixes.join(" ");
      const seen = g.seen_at ? g.seen_at.map((ms) => new Date(ms).toISOString()).join(" ") : null;
      if (chars > 0 && chars + prefixes.length > CHUNK_CHARS) await flush();
      const refreshed = new Date(g.refreshed_at ?? now.getTime()).toISOString();
      chunk.push({ module: s.module_id, source: g.source, origin: g.origin, via: g.via ?? "", prefixes, seen, refreshed });
      chars += prefixes.length;
    }
  }
  await flush();
  await Promise.all(pending);
  if (failure) throw (failure as { reason: unknown }).reason;
}

interface GroupRow {
  source: SnapshotSource;
  origin: string;
  via: string;
  prefixes: string;
  seen_at: string | null;
  refreshed_at?: string | null;
}

const toGroup = (r: GroupRow): SnapshotGroup => ({
  source: r.source,
  origin: r.origin,
  prefixes: splitText(r.prefixes, " "),
  seen_at: r.seen_at === null ? null : splitText(r.seen_at, " ").map(Number),
  ...(r.via ? { via: r.via } : {}),
  ...(r.refreshed_at === undefined ? {} : { refreshed_at: r.refreshed_at === null ? null : Number(r.refreshed_at) }),
});

/** A module's snapshot groups, all of them or those of one source. */
export async function listSnapshotGroups(db: Db, moduleId: string, source?: SnapshotSource): Promise<SnapshotGroup[]> {
  const rows = await db<GroupRow[]>`
    SELECT source, origin, via, array_to_string(prefixes, ' ') AS prefixes, (SELECT string_agg((extract(epoch FROM t) * 1000)::bigint::text, ' ' ORDER BY i) FROM unnest(seen_at) WITH ORDINALITY AS u(t, i)) AS seen_at,
           (extract(epoch FROM refreshed_at) * 1000)::bigint::text AS refreshed_at
    FROM snapshots WHERE module_id = ${moduleId} ${source ? db`AND source = ${source}` : db``} ORDER BY source, origin, via`;
  return rows.map(toGroup);
}

/** One source's group of a module's snapshot (what a failed source keeps); `via` '' for an ASN entered as itself. */
export async function findSnapshotGroup(db: Db, moduleId: string, source: SnapshotSource, origin: string, via = ""): Promise<SnapshotGroup | undefined> {
  const [row] = await db<GroupRow[]>`
    SELECT source, origin, via, array_to_string(prefixes, ' ') AS prefixes, (SELECT string_agg((extract(epoch FROM t) * 1000)::bigint::text, ' ' ORDER BY i) FROM unnest(seen_at) WITH ORDINALITY AS u(t, i)) AS seen_at,
           (extract(epoch FROM refreshed_at) * 1000)::bigint::text AS refreshed_at
    FROM snapshots WHERE module_id = ${moduleId} AND source = ${source} AND origin = ${origin} AND via = ${via}`;
  return row ? toGroup(row) : undefined;
}

/** Every prefix of each given module's snapshot (duplicates across its sources included). */
export async function listSnapshotPrefixes(db: Db, moduleIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(moduleIds.map((id) => [id, []]));
  if (!moduleIds.length) return out;
  const rows = await db<{ module_id: string; prefixes: string }[]>`
    SELECT module_id, array_to_string(prefixes, ' ') AS prefixes FROM snapshots WHERE module_id = ANY(${moduleIds}::uuid[])`;
  for (const r of rows) {
    const list = out.get(r.module_id)!;
    for (const p of splitText(r.prefixes, " ")) list.push(p);
  }
  return out;
}

/** Every group of a tenant's snapshots, with its module (the lookup's snapshot layer). */
export async function listTenantSnapshotGroups(db: Db, tenantId: string): Promise<(SnapshotGroup & { module_id: string })[]> {
  const rows = await db<(GroupRow & { module_id: string })[]>`
    SELECT module_id, source, origin, via, array_to_string(prefixes, ' ') AS prefixes, NULL AS seen_at
    FROM snapshots WHERE tenant_id = ${tenantId} ORDER BY module_id, source, origin, via`;
  return rows.map((r) => ({ module_id: r.module_id, ...toGroup(r) }));
}

/** The addresses (as /32 and /128 prefixes) that the given domains resolved to, per module. */
export async function listDomainAddresses(db: Db, moduleIds: string[], domains: string[]): Promise<{ module_id: string; origin: string; prefix: string }[]> {
  if (!moduleIds.length || !domains.length) return [];
  return db<{ module_id: string; origin: string; prefix: string }[]>`
    SELECT module_id, origin, p AS prefix FROM snapshots, unnest(prefixes) AS p
    WHERE module_id = ANY(${moduleIds}::uuid[]) AND source = 'domain' AND origin = ANY(${domains}::text[])
    ORDER BY module_id, origin, p`;
}

/** The member ASN groups an AS-SET gave at the last refresh (what a failed expansion keeps). */
export async function listSnapshotGroupsVia(db: Db, moduleId: string, via: string): Promise<SnapshotGroup[]> {
  const rows = await db<GroupRow[]>`
    SELECT source, origin, via, array_to_string(prefixes, ' ') AS prefixes, NULL AS seen_at, (extract(epoch FROM refreshed_at) * 1000)::bigint::text AS refreshed_at
    FROM snapshots WHERE module_id = ${moduleId} AND source = 'asn' AND via = ${via} ORDER BY origin`;
  return rows.map(toGroup);
}

export async function bumpSnapshotGeneration(db: Db, tenantId: string): Promise<void> {
  await db`
    INSERT INTO tenant_generations (tenant_id, snapshot_generation) VALUES (${tenantId}, 1)
    ON CONFLICT (tenant_id) DO UPDATE SET snapshot_generation = tenant_generations.snapshot_generation + 1`;
}
