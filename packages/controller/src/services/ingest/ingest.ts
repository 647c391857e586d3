import { NotFoundError } from "@rlc/shared/errors";
import type { Bus } from "../../bus/index.js";
import type { Db, Sql } from "../../db/connect.js";
import { type IngestModuleRow, listIngestModules, moduleExists, updateCdnSourceStatus, updateModuleRefreshed } from "../../db/ingest-inputs.js";
import { bumpSnapshotGeneration, replaceSnapshots } from "../../db/snapshots.js";
import { mapLimit } from "../../lib/map-limit.js";
import type { SecretBox } from "../../lib/secret-box.js";
import type { JobMetrics } from "../../metrics/controller-metrics.js";
import type { AsnSource } from "../../sources/asn-source.js";
import type { CountrySource } from "../../sources/country-source.js";
import type { IrrSource } from "../../sources/irr-source.js";
import type { OutboundClient } from "../../sources/outbound.js";
import type { RpkiValidator } from "../../sources/rpki-source.js";
import type { AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import type { JobContext } from "../operations/job-context.js";
import type { JobQueue } from "../operations/jobs.js";
import { readTenantSettings } from "../operations/settings.js";
import { type BogonSettings, countDistinct } from "../revisions/revision-build.js";
import type { RevisionBuilder } from "../revisions/revision-builder.js";
import type { RevisionCommitter } from "../revisions/revision-commit.js";
import { DIGEST_SCHEME, sameDigest } from "../revisions/revision-digest.js";
import { type CollectDeps, type CollectedModule, collectedPrefixes, collectModule } from "./collect.js";
import { checkRpki, rpkiReport, withRpkiDropped } from "./rpki-check.js";
import { dropStaleGroups, staleBudgetHours } from "./stale-sources.js";

export interface IngestParams {
  /** null: every enabled module. */
  module_ids: string[] | null;
  force: boolean;
}

export interface IngestDeps {
  /** Counts the sources a refresh could not collect. */
  metrics?: JobMetrics | undefined;
  sql: Sql;
  bus: Bus;
  /** The job queue a refresh request enqueues its module_ingest job on (with the tenant's queue cap). */
  queue: Pick<JobQueue, "enqueue">;
  outbound: OutboundClient;
  asnSource: AsnSource | null;
  /** Expands AS-SET entries (`IRR_SOURCE`): one session, so one connection, per refresh. */
  irrSource?: IrrSource | null;
  /** The VRPs modules with an `rpki_policy` are validated against (`RPKI_VRP_SOURCE`); null or absent = none configured. */
  rpki?: RpkiValidator | null;
  /** COUNTRY modules' source (`COUNTRY_SOURCE`); null or absent = none configured. */
  countrySource?: CountrySource | null;
  /** Opens the DoH profiles' sealed header values. */
  secretBox: SecretBox;
  /** Sources fetched at once within a module (collect.ts's default when left out). */
  concurrency?: number;
  /** Records the refresh requests, as every other request that changes something. */
  audit: AuditWriter;
  /** Guards and commits the revision a refresh builds, with its bundle sections. */
  committer: RevisionCommitter;
  /** Builds the revision, from the tenant's last build when it can (REFRESH_MODE). */
  builder: RevisionBuilder;
}

/** Modules collected at once by a refresh. */
const MODULES_AT_ONCE = 4;

/** The ingest use cases: asking for a refresh, and doing it (the module_ingest job). */
export function createIngestService(deps: IngestDeps) {
  const collectDeps: CollectDeps = {
    outbound: deps.outbound,
    asnSource: deps.asnSource,
    countrySource: deps.countrySource ?? null,
    services: { secretBox: deps.secretBox },
    ...(deps.concurrency ? { concurrency: deps.concurrency } : {}),
  };
  return {
    /** POST /v1/modules/refresh and /v1/modules/{id}/refresh: enqueues a module_ingest job in the caller's transaction. */
    async requestRefresh(tx: Db, ctx: RequestContext, moduleIds: string[] | null, force: boolean) {
      const tenantId = ctx.principal.tenantId;
      // The module's check and the job's statements go out together (one round trip less); a
      // module that does not exist still answers 404 first, and its job is rolled back with the rest.
      const [exists, enqueued] = await Promise.allSettled([
        moduleIds ? moduleExists(tx, tenantId, moduleIds[0]!) : true,
        deps.queue.enqueue(tx, {
          tenantId,
          type: "module_ingest",
          params: { module_ids: moduleIds, force },
          createdBy: `key:${ctx.principal.keyPrefix}`,
          now: ctx.now,
          afterCommit: ctx.afterCommit,
        }),
      ]);
      if (exists.status === "rejected") throw exists.reason;
      if (!exists.value) throw new NotFoundError("module", moduleIds![0]);
      if (enqueued.status === "rejected") throw enqueued.reason;
      const job = enqueued.value;
      await deps.audit.record(tx, ctx, {
        action: "run",
        resource_type: "job",
        resource_id: job.id,
        summary: `refresh ${moduleIds ? `of module ${moduleIds[0]}` : "of every enabled module"} requested${force ? " (force)" : ""} (job ${job.id})`,
      });
      return job;
    },

    /**
     * module_ingest: collect the refreshed modules (and enabled ones never collected), build the
     * revision from every enabled module's snapshot, and commit snapshots and revision in the one
     * transaction that ends the job. A guard trip, a cancel or a crash before that commit leaves no
     * trace. The build runs in that transaction, once it holds the tenant's revision lock (so it
     * reads every snapshot another refresh committed), with the snapshots' rows sent beside it.
     *
     * Measured with bench/refresh-lookup.mjs (1.2M collected prefixes, 2 cores, busy machine): a
     * full refresh took 42-51 s at 1.24-1.37 GiB peak RSS with one snapshot row per prefix and the
     * Map-of-Sets attribution; now 8.0-10.5 s at 646-695 MiB. Of that, collect is 4.6-5.8 s, mostly
     * in sources/ (ASN file load 1.6 s, CDN text parse 2.5 s for 850k lines), aggregate 2.2-3.3 s
     * (aggregateTagged about half), snapshot write 0.5-0.8 s, revision write 0.3-0.5 s.
     * bench/refresh-apply.mjs (1.40M collected), interleaved with the build before, loaded
     * machine: collect 6.0-7.7 s → 1.9-2.5 s (feeds kept as written when canonical, the ASN
     * file read in place, four modules at once), snapshot write 1.1-1.4 s → 0.8-1.0 s.
     */
    async refresh(job: Pick<JobContext, "job" | "signal" | "now" | "progress" | "checkpoint" | "complete">) {
      const started = Date.now();
      const tenantId = job.job.tenant_id;
      const params = job.job.params as unknown as IngestParams;
      const [modules, settings] = await Promise.all([listIngestModules(deps.sql, tenantId), readTenantSettings(deps.sql, tenantId)]);
      const bird = (settings.BIRD ?? {}) as BogonSettings;
      const wanted = new Set(params.module_ids ?? modules.filter((m) => m.enabled).map((m) => m.id));
      const targets = modules.filter((m) => wanted.has(m.id) || (m.enabled && m.collected_at === null));

      const timings = { collect: 0, aggregate: 0, guard: 0, snapshot_write: 0, revision_write: 0, sections_write: 0 };
      let mark = Date.now();
      const lap = (phase: keyof typeof timings) => {
        const now = Date.now();
        timings[phase] += now - mark;
        mark = now;
      };
      const collected = new Map<string, CollectedModule>();
      let done = 0;
      // Progress written in order (the modules end in any order, each write on a connection of the
      // pool), beside the work rather than before it: waited for once the modules are collected.
      let progressed = job.progress(0, targets.length);
      const noted = () => progressed.catch(() => {}); // rethrown where awaited
      noted();
      const irr = deps.irrSource?.session(job.signal) ?? null;
      try {
        // A few modules at once: one's feeds are fetched and its rows read while another's are
        // parsed (the parse is this thread's; the waits are not). In the targets' order after.
        const results = await mapLimit(targets, MODULES_AT_ONCE, async (m) => {
          await job.checkpoint();
          const c = await collectModule(deps.sql, { ...collectDeps, irr }, m, job.now(), job.signal);
          dropStaleGroups(c, staleBudgetHours(m.max_stale_hours, settings.source_max_stale_hours), m.collected_at, job.now());
          const sources = c.warnings.map((w) => w.source);
          deps.metrics?.sourcesFailed(
            tenantId,
            sources.filter((s) => !s.startsWith("stale:")),
          );
          deps.metrics?.sourcesStale(
            tenantId,
            sources.filter((s) => s.startsWith("stale:")).map((s) => s.slice("stale:".length)),
          );
          const now = ++done;
          progressed = progressed.then(() => job.progress(now, targets.length));
          noted();
          return c;
        });
        for (const [i, m] of targets.entries()) collected.set(m.id, results[i]!);
      } finally {
        irr?.close();
      }
      await Promise.all([progressed, job.checkpoint()]);
      lap("collect");

      const enabled = modules.filter((m) => m.enabled);
      // Validated modules go to the build as collected, so a new VRP set reaches them too.
      const rpki = await checkRpki(deps.sql, deps.rpki ?? null, modules, collected);
      const inputs = new Map([
        // A validated module's prefixes are the ones its validation kept (flattened by it, once).
        ...[...collected].filter(([id]) => !rpki.modules.has(id)).map(([id, c]) => [id, collectedPrefixes(c)] as const),
        ...[...rpki.modules].map(([id, r]) => [id, r.prefixes] as const),
      ]);
      lap("aggregate");

      const afterCommit: (() => void)[] = [];
      let generation = "";
      let build: Awaited<ReturnType<RevisionBuilder["build"]>> | undefined;
      const result = await job.complete(async (tx) => {
        // The tenant's revision lock before the build: the build reads the snapshots and the
        // generation once no other refresh of the tenant can commit until this one has (one
        // built from before another's commit would leave that one's change out of the revision).
        const current = await deps.committer.lockCurrent(tx, tenantId);
        lap("guard");
        const now = job.now();
        // The collected snapshots are sent once the build has read what it needs and before its
        // own work, which holds this thread: the server stores them meanwhile (~15 ms a 60k-prefix
        // row, most of it splitting the text) instead of after it. Awaited below; a failure fails
        // the transaction there.
        let written: Promise<void> | null = null;
        const sendSnapshots = async () => {
          written = replaceSnapshots(tx, tenantId, [...collected.values()], now);
          written.catch(() => {}); // rethrown where awaited
          // The statements go out (postgres.js writes them a tick after they are made) before the build.
          await new Promise<void>((resolve) => setImmediate(resolve));
        };
        // Every module's part from the tenant's last build when the snapshots are as it saw them
        // (only what the collected modules changed is rebuilt), else from the stored snapshots.
        build = await deps.builder.build(
          tx,
          tenantId,
          enabled.map((m: IngestModuleRow) => ({ module_id: m.id, name: m.name, community: m.community, action: m.action })),
          inputs,
          bird,
          sendSnapshots,
        );
        const built = build.built;
        lap("aggregate");
        const unchanged = current !== undefined && sameDigest(current, built);
        if (!unchanged) {
          const maxDrop = typeof settings.revision_guard_max_drop_percent === "number" ? settings.revision_guard_max_drop_percent : 50;
          await deps.committer.guard(tx, tenantId, current, built.content, maxDrop, params.force, built.change);
        }
        lap("guard");
        await (written ?? replaceSnapshots(tx, tenantId, [...collected.values()], now));
        // Distinct collected prefixes per module; a disabled module is outside the revision.
        const counts = new Map([...collected.values()].map((c) => [c.module_id, built.collected.get(c.module_id) ?? countDistinct(collectedPrefixes(c))]));
        // One round trip for them all: the statements go out together on the transaction's
        // connection and run in the order they are made (the generation read after the bump).
        const bumped = collected.size ? bumpSnapshotGeneration(tx, tenantId) : Promise.resolve();
        const updated = [...collected.values()].flatMap((c) => {
          const allFailed = c.sources_failed > 0 && c.sources_ok === 0;
          return [
            updateModuleRefreshed(tx, c.module_id, {
              prefix_count_v4: counts.get(c.module_id)!.v4,
              prefix_count_v6: counts.get(c.module_id)!.v6,
              collected_at: now,
              last_refreshed_at: allFailed ? null : now,
              last_refresh_error: c.warnings.length
                ? c.warnings
                    .map((w) => `${w.source}: ${w.message}`)
                    .join("; ")
                    .slice(0, 2000)
                : null,
            }),
            ...c.cdn.map((s) => updateCdnSourceStatus(tx, s.id, { ...s, at: now })),
          ];
        });
        [generation] = await Promise.all([deps.builder.generationOf(tx, tenantId), bumped, ...updated]);
        lap("snapshot_write");
        let revisionId = current?.revision_id ?? null;
        let sectionsError: string | null = null;
        if (!unchanged) {
          const committed = await deps.committer.commit(
            tx,
            tenantId,
            current,
            {
              created_at: now,
              created_by: job.job.created_by,
              reason: "ingest",
              rolled_back_from: null,
              digest: built.digest,
              digest_scheme: DIGEST_SCHEME,
              prefix_count_v4: built.content.v4.length,
              prefix_count_v6: built.content.v6.length,
              input_prefix_count: built.input_prefix_count,
              dropped_prefix_count: built.dropped_prefix_count,
              modules: withRpkiDropped(built.modules, rpki),
              content: built.content,
              change: built.change,
            },
            (fn) => afterCommit.push(fn),
          );
          revisionId = committed.row.revision_id;
          // Said in the result rather than failing the refresh: the revision stands, and the first
          // apply of it builds what could not be built here.
          sectionsError = committed.sections_error;
          timings.sections_write += committed.sections_ms;
          mark += committed.sections_ms;
        }
        lap("revision_write");
        return {
          revision_id: revisionId,
          unchanged,
          duration_ms: Date.now() - started,
          timings_ms: timings,
          build: build.incremental ? "incremental" : "full",
          modules: [...collected.values()].map((c) => ({
            module_id: c.module_id,
            prefix_count: counts.get(c.module_id)!.v4 + counts.get(c.module_id)!.v6,
            sources_ok: c.sources_ok,
            sources_failed: c.sources_failed,
            sources_stale: c.sources_stale,
            ...(c.as_sets ? { as_sets: c.as_sets } : {}),
            ...rpkiReport(rpki, c.module_id).part,
          })),
          warnings: [...collected.values()].flatMap((c) => [...c.warnings, ...rpkiReport(rpki, c.module_id).warnings]),
          ...(rpki.status ? { rpki: rpki.status } : {}),
          ...(sectionsError === null ? {} : { sections_error: sectionsError }),
        };
      });
      // `complete` returns once the revision has committed with the job's end.
      build!.keep(generation, collected.size > 0);
      for (const fn of afterCommit) fn();
      return result;
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;
