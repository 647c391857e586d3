import { dirname } from "node:path";
import {
  type BirdTarget,
  configureBird,
  configureTimeoutSeconds,
  renderForTarget,
  restoreRendered,
  type SectionSource,
  SectionStaticsCache,
  StaticsCache,
  stageFiles,
  validateRendered,
  WrittenFiles,
} from "@rlc/shared/bird";
import { SectionTags } from "@rlc/shared/bundle";
import { backoffDelay } from "@rlc/shared/time";
import { BundleFetcher, type FetchedBundle } from "./bundle/fetch-verified.js";
import { ControllerError, type DesiredRevision } from "./bundle/http-client.js";
import { peekIssue } from "./bundle/kept-bundle.js";
import { type KeptDelta, type KeptPrefixes, tallyOfKept } from "./bundle/kept-prefixes.js";
import { ConfirmedRevision } from "./confirmed.js";
import { errorFields } from "./log.js";
import { Probation } from "./probation/probation.js";
import type { AppliedRecord, RefusedIssue } from "./state.js";
import { classifyError } from "./sync-errors.js";
import { pickIssue, sameIssue } from "./sync-issue.js";
import { type SyncLoopOptions, type SyncTrigger, stepTimer } from "./sync-options.js";

export type { SyncLoopOptions, SyncTrigger };

export type SyncResult = "applied" | "up_to_date" | "already_refused" | "no_revision" | "failed";

/**
 * A refused bundle is tried again after this long even when the controller still names it;
 * a reverted one is not (trying again would take its sessions down again).
 */
const REFUSAL_MEMORY_MS = 10 * 60 * 1000;

/**
 * THE order of a sync, in one place, read top to bottom in {@link SyncLoop.sync}: fetch → verify
 * → render → validate (`bird -p`) → baseline → stage (swap the files in) → configure
 * (`configure timeout N`) → probation → confirm (or revert) → record → report. Each step is a
 * call that returns; none calls back into the loop.
 *
 * Runs are single-flight: triggers during a run coalesce into one more run after it, never a
 * second run beside it (two applies would race on BIRD's one pending configuration). A bundle
 * refused for what it is (signature, speaker, sequence, expiry, a config BIRD refuses) is not
 * fetched again until the controller names a different one; a passing failure (controller or
 * BIRD unreachable) is retried with backoff. Nothing that fails changes what BIRD runs.
 */
export class SyncLoop {
  readonly #o: SyncLoopOptions;
  #queued: SyncTrigger | null = null;
  #running: Promise<void> | null = null;
  #stopped = false;
  /**
   * The issue last refused: not fetched again until the controller names another. Kept in the
   * StateStore too, so a restart does not retry a bundle BIRD refused; undefined = not read yet.
   */
  #refused: RefusedIssue | null | undefined = undefined;
  #retryAttempt = 0;
  #retryAbort: AbortController | null = null;
  /** The revision BIRD runs: its prefixes for the next delta, its payload for the probation. */
  readonly #confirmed: ConfirmedRevision;
  /** Each community set's text from the last render: a refresh renders only the sets it changed. */
  readonly #statics = new StaticsCache();
  /** The agent's one numbering of community sets, for every section it keeps in columns. */
  readonly #tags = new SectionTags();
  /** The route files of the last render from a section (made again from it when asked, not held): a delta writes only the sets it touched. */
  readonly #sectionStatics: SectionStaticsCache;
  readonly #target: BirdTarget;
  readonly #fetcher: BundleFetcher;
  readonly #probation: Probation;

  constructor(options: SyncLoopOptions) {
    const o = options;
    this.#o = o;
    this.#confirmed = new ConfirmedRevision(o.state, this.#tags);
    // The files this loop writes beside BIRD_CONFIG_PATH: an unchanged community set's file is
    // known by the text it was written with, and not read again on the next apply.
    const written = new WrittenFiles(dirname(o.birdConfigPath));
    this.#target = { mode: o.birdMode, configPath: o.birdConfigPath, stagingDir: o.stagingDir, written };
    // A set a delta touched is written again from its running file, read back when it holds what this loop wrote.
    this.#sectionStatics = new SectionStaticsCache((name, text) => written.readBack(name, text));
    this.#fetcher = new BundleFetcher({
      client: o.client,
      state: o.state,
      log: o.log,
      clock: o.clock,
      speakerId: o.speakerId,
      tenantId: o.tenantId,
      maxBundleBytes: o.maxBundleBytes,
      tags: this.#tags,
    });
    this.#probation = new Probation({
      bird: o.bird,
      clock: o.clock,
      log: o.log,
      metrics: o.metrics,
      controllerHealth: o.controllerHealth,
      healthWaitMs: o.healthWaitMs,
      sampleMs: o.probationSampleMs,
    });
  }

  /** Asks for a sync; returns at once. During a run, the newest trigger waits for the next one. */
  trigger(trigger: SyncTrigger): void {
    if (this.#stopped) return;
    this.#queued = trigger;
    if (!this.#running) this.#running = this.#drain();
  }

  /** Resolves once no run is in flight or queued. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** No new runs; waits for the one in flight (an apply is not cut off between configure and confirm). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#queued = null;
    this.#retryAbort?.abort();
    await this.idle();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queued && !this.#stopped) {
        const next = this.#queued;
        this.#queued = null;
        // sync() reports its own failures; this only keeps a bug in it from ending the loop.
        await this.sync(next).catch((error: unknown) => this.#o.log.error("sync: unexpected failure", errorFields(error)));
      }
    } finally {
      this.#running = null;
    }
  }

  /** One sync, start to end. Public for tests and the benchmark; use {@link trigger} otherwise. */
  async sync(trigger: SyncTrigger): Promise<SyncResult> {
    const { log, state, clock } = this.#o;
    let desired: DesiredRevision | null = trigger.desired ?? null;
    /** The bundle as it came, before it was verified: what a refusal names. */
    const offered: { bytes: Uint8Array | null } = { bytes: null };
    try {
      desired ??= await this.#o.client.latest();
      if (!desired) return "no_revision";
      const applied = await state.readApplied();
      if (applied && applied.revision_id === desired.revision_id && applied.digest === desired.digest) {
        this.#retryAttempt = 0;
        return "up_to_date";
      }
      const refused = await this.#readRefused();
      if (refused && (refused.for_good || clock.now() - refused.at < REFUSAL_MEMORY_MS) && sameIssue(refused, desired)) {
        return "already_refused";
      }
      log.info("sync: fetching bundle", { reason: trigger.reason, revision_id: desired.revision_id });
      const steps = stepTimer(clock);

      // Fetch and verify: a delta from the prefixes BIRD runs when the agent holds them.
      const base = applied && applied.revision_id !== desired.revision_id ? await this.#confirmed.prefixes(applied).catch(() => null) : null;
      steps.mark("base");
      const fetched = await this.#fetcher.fetch({ revisionId: desired.revision_id, applied, base, offered, steps });
      const payload = fetched.verified.payload;
      if (payload.revision_id !== desired.revision_id) {
        log.warn("sync: the controller sent another revision than it named", { named: desired.revision_id, got: payload.revision_id });
      }

      // Render, then validate: nothing changes on disk or in BIRD before `bird -p` accepts it.
      const { kept, delta } = fetched.verified;
      const rendered = renderForTarget(payload, { ...this.#target, birdVersion: await this.#o.birdVersion?.() }, this.#statics, this.#fromSection(kept, delta));
      steps.mark("render");
      const bird = { birdc: this.#o.bird, runner: this.#o.runner, clock, birdBin: this.#o.birdBin };
      const change = await validateRendered(bird, this.#target, rendered);
      steps.mark("bird_p");
      // Byte-identical to what BIRD runs (a re-issue of the same content): nothing to configure or watch.
      let probationMs = 0;
      if (!change) log.info("sync: BIRD already runs this configuration; configure skipped", { revision_id: payload.revision_id });
      else {
        // What runs now, as late as can be: the sessions the probation holds to their state.
        const previous = await this.#confirmed.payload(applied).catch(() => null);
        const baseline = await this.#probation.baseline();
        steps.mark("baseline");
        // Stage, configure: BIRD reverts by itself from here unless confirmed.
        const staged = await stageFiles(change);
        steps.mark("swap");
        const timeoutSeconds = configureTimeoutSeconds(payload);
        const pending = await configureBird(bird, staged, { timeoutSeconds });
        steps.mark("configure");
        // Probation, then confirm; or revert, which throws `reverted`.
        const tallies = { payload: () => (kept ? tallyOfKept(kept) : null), previous: () => (base && previous ? tallyOfKept(base) : null) };
        const watched = await this.#probation.watch(pending, { payload, rendered, baseline, previous, tallies, timeoutSeconds, steps: steps.spent() });
        probationMs = watched.verdict.ok ? await this.#probation.confirm(pending, watched) : await this.#probation.revert(pending, watched);
      }

      await this.#record(fetched, probationMs);
      return "applied";
    } catch (error) {
      await this.#fail(error, trigger, desired, offered.bytes);
      return "failed";
    } finally {
      // The route files are written (or given up): the loop keeps none of their bytes.
      this.#sectionStatics.settle();
      this.#confirmed.settle();
    }
  }

  /** What BIRD confirmed: on disk, in the metrics, to the controller. */
  async #record(fetched: FetchedBundle, probationMs: number): Promise<void> {
    const { payload } = fetched.verified;
    const record: AppliedRecord = {
      revision_id: payload.revision_id,
      sequence: payload.sequence,
      digest: payload.digest,
      applied_at: new Date(this.#o.clock.now()).toISOString(),
    };
    await this.#confirmed.record(fetched.bytes, record, fetched.verified);
    this.#o.metrics.recordApplied(record);
    this.#o.reporter.setError(null);
    await this.#setRefused(null);
    this.#retryAttempt = 0;
    this.#o.log.info("sync: applied", { revision_id: record.revision_id, sequence: record.sequence, probation_ms: probationMs });
    await this.#o.reporter.report("applied");
  }

  /** The render's source when the section is held in columns (every rl-bundle/2 the columns take). */
  #fromSection(kept: KeptPrefixes | null, delta: KeptDelta | null): SectionSource | undefined {
    return kept ? { input: { section: kept.section, sha256: kept.sha256, delta }, cache: this.#sectionStatics } : undefined;
  }

  async #fail(error: unknown, trigger: SyncTrigger, desired: DesiredRevision | null, bytes: Uint8Array | null): Promise<void> {
    if (error instanceof ControllerError && error.code === "controller_busy") {
      // The controller's limits (this key's transfers in flight, a full line) say "later", not
      // "no": nothing failed that the apply waiting on this speaker should hear about.
      this.#o.log.info("sync: the controller is busy; trying again later", { reason: trigger.reason, error: error.message });
      this.#scheduleRetry();
      return;
    }
    const c = classifyError(error);
    // Read without verifying, only to name the refused bundle and remember the refusal.
    const offered = bytes ? peekIssue(bytes) : { sequence: null, issued_at: null };
    // The refusal is remembered in the controller's terms (what it names next is compared with
    // it); the bundle's own fields only fill what the controller did not say.
    if (desired) desired = { ...desired, sequence: desired.sequence ?? offered.sequence, issued_at: desired.issued_at ?? offered.issued_at };
    this.#o.metrics.recordFailure(c.code);
    this.#o.log.warn("sync: failed; BIRD keeps its running config", { reason: trigger.reason, code: c.code, error: c.message, permanent: c.permanent });
    if (c.permanent && desired) {
      const refused = { ...pickIssue(desired), at: this.#o.clock.now(), for_good: c.code === "reverted" };
      await this.#setRefused(refused).catch((e: unknown) => this.#o.log.warn("sync: the refusal is not kept across a restart", errorFields(e)));
    } else this.#scheduleRetry();
    // Without a revision there is nothing the controller waits on (latest() itself failed).
    if (!desired) return;
    this.#o.reporter.setError({
      code: c.code,
      message: c.message,
      revision_id: desired.revision_id,
      sequence: offered.sequence,
      at: new Date(this.#o.clock.now()).toISOString(),
      ...(c.check ? { check: c.check, sessions: c.sessions ?? [] } : {}),
    });
    await this.#o.reporter.report("apply_failed");
  }

  async #readRefused(): Promise<RefusedIssue | null> {
    if (this.#refused === undefined) this.#refused = await this.#o.state.readRefused();
    return this.#refused;
  }

  /** In memory first, so a state directory that cannot be written still stops the retries of this process. */
  async #setRefused(refused: RefusedIssue | null): Promise<void> {
    const had = this.#refused;
    this.#refused = refused;
    if (refused !== null || had !== null) await this.#o.state.writeRefused(refused);
  }

  #scheduleRetry(): void {
    if (this.#stopped) return;
    this.#retryAbort?.abort();
    const abort = new AbortController();
    this.#retryAbort = abort;
    const wait = backoffDelay(this.#retryAttempt++, this.#o.retry ?? { baseMs: 2000, maxMs: 300_000 }, this.#o.random);
    void this.#o.clock.sleep(wait, abort.signal).then(() => {
      if (!abort.signal.aborted) this.trigger({ reason: "retry" });
    });
  }

  /**
   * At start: puts back on disk the files of the bundle BIRD last confirmed, when they differ.
   * After a crash between `configure timeout` and confirm, BIRD went back in memory but the
   * unconfirmed files stayed; without this, BIRD's next restart would load them. Files that hold
   * that very configuration as an agent before the render by BIRD version wrote it (without
   * `authentication md5;`, say) are rewritten for this BIRD once, and logged as that, not as a restore.
   */
  async restoreConfirmedFiles(): Promise<boolean> {
    const applied = await this.#o.state.readApplied();
    const payload = await this.#confirmed.payload(applied);
    if (!applied || !payload) return false;
    const kept = await this.#confirmed.prefixes(applied).catch(() => null);
    const birdVersion = (await this.#o.birdVersion?.()) ?? null;
    const render = (version: string | null) =>
      renderForTarget(payload, { ...this.#target, birdVersion: version }, this.#statics, this.#fromSection(kept, null));
    const outcome = await restoreRendered(this.#target, render(birdVersion), birdVersion === null ? undefined : () => render(null));
    this.#sectionStatics.settle();
    const fields = { revision_id: applied.revision_id };
    if (outcome === "restored") this.#o.log.warn("restored the files of the last confirmed revision", fields);
    if (outcome === "rewritten") {
      this.#o.log.info("rewrote the files of the last confirmed revision for this BIRD's version (once, after an upgrade)", {
        ...fields,
        bird_version: birdVersion,
      });
    }
    return outcome !== "unchanged";
  }
}
