import { randomBytes, randomUUID } from "node:crypto";
import { diffPrefixColumns, encodePrefixColumns, type PrefixColumns, sha256Hex } from "@rlc/shared/bundle";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BODY_PART_BYTES,
  type BundleSectionMeta,
  findBundleSection,
  insertBundleSection,
  writeBundleSectionBody,
} from "../../packages/controller/src/db/bundle-sections.js";
import type { Db } from "../../packages/controller/src/db/connect.js";
import { deleteRevisions } from "../../packages/controller/src/db/revisions.js";
import { ENVELOPE_CHUNK_BYTES, sealEnvelope } from "../../packages/controller/src/lib/sealed-envelope.js";
import { createSecretBox } from "../../packages/controller/src/lib/secret-box.js";
import { openSection, type SectionDeps } from "../../packages/controller/src/services/deploy/bundle-sections.js";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import { openTestDatabase } from "../helpers/db.js";

// A big section body (33 MB sealed at 1.2M prefixes) is written ~1 MiB a statement and put
// together in the database by one statement (migration 0028): the driver's hex encoding of the
// whole body held the event loop for most of a second. Readers see no body (the section opened
// from its base and the delta) or the whole one.

let db: Awaited<ReturnType<typeof openTestDatabase>>;
const sql = (): Db => db.sql;
const tenant = randomUUID();
const deps: SectionDeps = { secretBox: createSecretBox(randomBytes(32)), revisions: createRevisionStore() };
/** Small parts, so a section of a few thousand prefixes goes in many. */
const PART = 4096;

// Two revisions' sections: the second of the first with a few lines changed.
const SETS = [["65000:100"], ["65000:100", "65000:2"], ["64512:1"]];
const prefixAt = (i: number) => `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`;
const columnsOf = (n: number, changed: (i: number) => boolean): PrefixColumns => ({
  v4: { length: n, prefixAt, communitiesAt: (i) => SETS[(changed(i) ? 1 : 0) + ((i >> 4) % 2)]! },
  v6: { length: 0, prefixAt: () => "", communitiesAt: () => [] },
});
const baseColumns = columnsOf(3000, () => false);
const nextColumns = columnsOf(3000, (i) => i % 500 === 7);
const basePlain = encodePrefixColumns(baseColumns.v4, baseColumns.v6);
const nextPlain = encodePrefixColumns(nextColumns.v4, nextColumns.v6);
const deltaPlain = diffPrefixColumns(baseColumns, nextColumns);

let revisions = 0;
async function newRevision(): Promise<number> {
  const id = ++revisions;
  await sql()`
    INSERT INTO revisions (tenant_id, revision_id, created_at, reason, digest, prefix_count_v4, prefix_count_v6, input_prefix_count, dropped_prefix_count, modules, content)
    VALUES (${tenant}, ${id}, now(), 'ingest', 'test', 0, 0, 0, 0, '[]'::jsonb, ''::bytea)`;
  return id;
}
const meta = (revisionId: number, baseRevisionId: number, plain: Buffer, made: number | null): BundleSectionMeta => ({
  revision_id: revisionId,
  base_revision_id: baseRevisionId,
  sha256: sha256Hex(plain),
  prefixes_sha256: sha256Hex(baseRevisionId ? nextPlain : plain),
  base_prefixes_sha256: baseRevisionId ? sha256Hex(basePlain) : null,
  prefixes_pages_sha256: null,
  size: plain.length,
  chunk: ENVELOPE_CHUNK_BYTES,
  made_from: made,
  made_depth: made === null ? 0 : 1,
});
const seal = (plain: Buffer) => sealEnvelope(deps.secretBox, plain);
const found = async (revisionId: number) => (await findBundleSection(sql(), tenant, revisionId, 0))!;
const parts = async (revisionId?: number) =>
  Number(
    (
      await sql()<{ n: string }[]>`
        SELECT count(*) AS n FROM bundle_section_parts WHERE tenant_id = ${tenant} ${revisionId === undefined ? sql()`` : sql()`AND revision_id = ${revisionId}`}`
    )[0]!.n,
  );

/** The database as a process sees it that stops once a body's parts are written, before they are put together. */
const stoppedBeforeAssembly = () =>
  new Proxy(sql(), {
    apply(target, thisArg, args: unknown[]) {
      const strings = args[0];
      if (Array.isArray(strings) && strings.join("").includes("string_agg")) return Promise.reject(new Error("the process stopped"));
      return Reflect.apply(target, thisArg, args);
    },
  });

/** The database, recording the largest bytea a statement sends. */
function recording() {
  let largest = 0;
  const db = new Proxy(sql(), {
    apply(target, thisArg, args: unknown[]) {
      for (const v of args.slice(1)) if (v instanceof Uint8Array) largest = Math.max(largest, v.byteLength);
      return Reflect.apply(target, thisArg, args);
    },
  }) as Db;
  return { db, largest: () => largest };
}

beforeAll(async () => {
  db = await openTestDatabase();
  await sql()`INSERT INTO tenants (id, name, created_at) VALUES (${tenant}, 'parts', now())`;
}, 60_000);

afterAll(async () => {
  await db?.close();
});

describe("a big section body written in parts", () => {
  it("reads back byte for byte, inserted whole in a transaction and written after the commit", async () => {
    const base = await newRevision();
    const next = await newRevision();
    const sealedBase = await seal(basePlain);
    expect(sealedBase.length).toBeGreaterThan(4 * PART);
    await db.sql.begin((tx) => insertBundleSection(tx, tenant, { ...meta(base, 0, basePlain, null), body: sealedBase }, PART));
    await insertBundleSection(sql(), tenant, { ...meta(next, base, deltaPlain, null), body: await seal(deltaPlain) }, PART);
    await insertBundleSection(sql(), tenant, { ...meta(next, 0, nextPlain, base), body: null }, PART);
    expect((await openSection(sql(), deps, tenant, await found(base))).equals(basePlain)).toBe(true);
    // Opened from the base's and the delta until its body is written.
    expect((await openSection(sql(), deps, tenant, await found(next))).equals(nextPlain)).toBe(true);

    const sealedNext = await seal(nextPlain);
    expect(await writeBundleSectionBody(sql(), tenant, next, sha256Hex(nextPlain), sealedNext, PART)).toBe(true);
    const written = await found(next);
    expect(written).toMatchObject({ made_from: null, made_depth: 0 });
    const same = (
      await sql()<{ same: boolean }[]>`
      SELECT body = ${sealedNext} AS same FROM bundle_sections WHERE tenant_id = ${tenant} AND revision_id = ${next} AND base_revision_id = 0`
    )[0]!.same;
    expect(same).toBe(true);
    expect((await openSection(sql(), deps, tenant, written)).equals(nextPlain)).toBe(true);
    // Written once: a second write finds the body there and leaves it.
    expect(await writeBundleSectionBody(sql(), tenant, next, sha256Hex(nextPlain), await seal(nextPlain), PART)).toBe(false);
    expect(await parts()).toBe(0);
  });

  it("any body and part size: the stored body is the one written", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 3000 }), fc.integer({ min: 1, max: 700 }), async (bytes, partBytes) => {
        const id = await newRevision();
        const body = Buffer.from(bytes);
        await db.sql.begin((tx) => insertBundleSection(tx, tenant, { ...meta(id, 0, body, null), body }, partBytes));
        const same = (
          await sql()<{ same: boolean }[]>`
          SELECT body = ${body} AS same FROM bundle_sections WHERE tenant_id = ${tenant} AND revision_id = ${id} AND base_revision_id = 0`
        )[0]!.same;
        expect(same).toBe(true);
      }),
      { numRuns: 25 },
    );
    expect(await parts()).toBe(0);
  });

  it("a write stopped before its parts were put together leaves the section opening from its base; the next write deletes them and succeeds", async () => {
    const base = await newRevision();
    const next = await newRevision();
    await insertBundleSection(sql(), tenant, { ...meta(base, 0, basePlain, null), body: await seal(basePlain) }, PART);
    await insertBundleSection(sql(), tenant, { ...meta(next, base, deltaPlain, null), body: await seal(deltaPlain) }, PART);
    await insertBundleSection(sql(), tenant, { ...meta(next, 0, nextPlain, base), body: null }, PART);
    // The process stops (here: its statement fails) once its parts are written, before they are put together.
    await expect(writeBundleSectionBody(stoppedBeforeAssembly(), tenant, next, sha256Hex(nextPlain), await seal(nextPlain), PART)).rejects.toThrow(/stopped/);
    expect(await parts(next)).toBeGreaterThan(2);
    expect(await found(next)).toMatchObject({ made_from: base });
    expect((await openSection(sql(), deps, tenant, await found(next))).equals(nextPlain)).toBe(true);

    expect(await writeBundleSectionBody(sql(), tenant, next, sha256Hex(nextPlain), await seal(nextPlain), PART)).toBe(true);
    expect(await parts(next)).toBe(0);
    expect((await openSection(sql(), deps, tenant, await found(next))).equals(nextPlain)).toBe(true);
  });

  it("two writes of the same body at once (two replicas) never mix their parts: exactly one writes it, whole", async () => {
    const base = await newRevision();
    const next = await newRevision();
    await insertBundleSection(sql(), tenant, { ...meta(base, 0, basePlain, null), body: await seal(basePlain) }, PART);
    await insertBundleSection(sql(), tenant, { ...meta(next, base, deltaPlain, null), body: await seal(deltaPlain) }, PART);
    await insertBundleSection(sql(), tenant, { ...meta(next, 0, nextPlain, base), body: null }, PART);
    // Sealed apart: the same plain bytes, not the same stored ones.
    const bodies = [await seal(nextPlain), await seal(nextPlain)];
    expect(bodies[0]!.equals(bodies[1]!)).toBe(false);
    const wrote = await Promise.all(bodies.map((b) => writeBundleSectionBody(sql(), tenant, next, sha256Hex(nextPlain), b, PART)));
    expect(wrote.filter(Boolean)).toHaveLength(1);
    const body = (
      await sql()<{ body: Uint8Array }[]>`
      SELECT body FROM bundle_sections WHERE tenant_id = ${tenant} AND revision_id = ${next} AND base_revision_id = 0`
    )[0]!.body;
    expect(Buffer.from(body).equals(bodies[wrote.indexOf(true)]!)).toBe(true);
    expect((await openSection(sql(), deps, tenant, await found(next))).equals(nextPlain)).toBe(true);
    expect(await parts(next)).toBe(0);
  });

  it("parts left behind go with their section when a prune deletes it", async () => {
    const base = await newRevision();
    const next = await newRevision();
    await insertBundleSection(sql(), tenant, { ...meta(base, 0, basePlain, null), body: await seal(basePlain) }, PART);
    await insertBundleSection(sql(), tenant, { ...meta(next, 0, nextPlain, base), body: null }, PART);
    await expect(writeBundleSectionBody(stoppedBeforeAssembly(), tenant, next, sha256Hex(nextPlain), await seal(nextPlain), PART)).rejects.toThrow(/stopped/);
    expect(await parts(next)).toBeGreaterThan(2);
    expect(await deleteRevisions(sql(), tenant, [next])).toBe(1);
    expect(await parts(next)).toBe(0);
    // A write that comes after the prune finds no section to write.
    expect(await writeBundleSectionBody(sql(), tenant, next, sha256Hex(nextPlain), await seal(nextPlain), PART)).toBe(false);
  });

  it("does not hold the event loop while it is sent: no statement carries more than a part of the body", async () => {
    // The stall was the driver's hex text of the whole body (0.4 s for 30 MB on PostgreSQL, 2 s
    // embedded: bench/section-body-write.mjs); a statement of a part costs a part's.
    const body = randomBytes(5 * 2 ** 20 + 12_345);
    const id = await newRevision();
    await insertBundleSection(sql(), tenant, { ...meta(id, 0, nextPlain, 1), body: null });
    const written = recording();
    expect(await writeBundleSectionBody(written.db, tenant, id, sha256Hex(nextPlain), body)).toBe(true);
    expect(written.largest()).toBeGreaterThan(0);
    expect(written.largest()).toBeLessThanOrEqual(Math.min(BODY_PART_BYTES, body.length / 4));
    const stored = (
      await sql()<{ same: boolean }[]>`
      SELECT body = ${body} AS same FROM bundle_sections WHERE tenant_id = ${tenant} AND revision_id = ${id} AND base_revision_id = 0`
    )[0]!.same;
    expect(stored).toBe(true);
  });
});
