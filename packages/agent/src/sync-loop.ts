import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  type BirdReply,
  birdReadable,
  loadBirdConfig,
  type PendingApply,
  type RenderedConfig,
  renderBirdConfig,
  renderOptionsFor,
  StaticsCache,
  writeFileAtomic,
} from "@rlc/shared/bird";
import { BundleError, type BundlePayload, type ReceivedBundle, type VerifyOptions } from "@rlc/shared/bundle";
import { backoffDelay } from "@rlc/shared/time";
import { ControllerError, type DesiredRevision } from "./bundle/http-client.js";
import { fetchVerified, peekIssue } from "./bundle/kept-bundle.js";
import type { KeptPrefixes } from "./bundle/kept-prefixes.js";
import { updatePinnedKeys } from "./bundle/signing-keys.js";
import { headCheck, type VerifiedKept, verifyKept } from "./bundle/verify-kept.js";
import { ConfirmedRevision } from "./confirmed.js";
import { errorFields } from "./log.js";
import { type BirdBaseline, type ProbationDeps, probationWindowMs, readBaseline, revertAndVerify, runProbation } from "./probation.js";
import type { AppliedRecord, RefusedIssue } from "./state.js";
import { type ProbationVerdict, planProbation } from "./status/probation-rules.js";
import { classifyError, SyncError } from "./sync-errors.js";
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
 * THE order of a sync, in one place: notification → fetch → verify → render → validate
 * (`bird -p`) → apply (`configure timeout N`) → probation → confirm (or undo) → record → report.
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

  constructor(options: SyncLoopOptions) {
    this.#o = options;
    this.#confirmed = new ConfirmedRevision(options.state);
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
    const { log, state } = this.#o;
    let desired: DesiredRevision | null = trigger.desired ?? null;
    let bytes: Uint8Array | null = null;
    try {
      desired ??= await this.#o.client.latest();
      if (!desired) return "no_revision";
      const applied = await state.readApplied();
      if (applied && applied.revision_id === desired.revision_id && applied.digest === desired.digest) {
        this.#retryAttempt = 0;
        return "up_to_date";
      }
      const refused = await this.#readRefused();
      if (refused && (refused.for_good || this.#o.clock.now() - refused.at < REFUSAL_MEMORY_MS) && sameIssue(refused, desired)) {
        return "already_refused";
      }
      log.info("sync: fetching bundle", { reason: trigger.reason, revision_id: desired.revision_id });

      const steps = stepTimer(this.#o.clock);
      const onHead = headCheck(await state.readSigningKeys(), this.#verifyOptions(applied));
      const fetchBundle = async (r: number, b: number | null) => {
        const got = await this.#o.client.fetchBundle(r, { baseRevisionId: b, onHead });
        steps.mark("fetch");
        return got;
      };
      const keep = (received: Uint8Array) => void (bytes = received);
      const base = applied && applied.revision_id !== desired.revision_id ? await this.#confirmed.prefixes(applied).catch(() => null) : null;
      steps.mark("base");
      const verify = async (received: ReceivedBundle, b: KeptPrefixes | null) => {
        const v = await this.#verify(received, applied, b);
        steps.mark("verify");
        return v;
      };
      const fetched = await fetchVerified({ fetchBundle, log }, desired.revision_id, base, verify, keep);
      const verified = fetched.verified;
      const payload = verified.payload;
      if (payload.revision_id !== desired.revision_id) {
        log.warn("sync: the controller sent another revision than it named", { named: desired.revision_id, got: payload.revision_id });
      }
      const previous = await this.#confirmed.payload(applied).catch(() => null);
      let baseline: BirdBaseline | null = null;
      const loaded = await loadBirdConfig(
        { birdc: this.#o.bird, runner: this.#o.runner, clock: this.#o.clock, birdBin: this.#o.birdBin },
        {
          payload,
          mode: this.#o.birdMode,
          configPath: this.#o.birdConfigPath,
          stagingDir: this.#o.stagingDir,
          statics: this.#statics,
          birdVersion: await this.#o.birdVersion?.(),
          onStep: (step) => steps.mark({ rendered: "render", validated: "bird_p", swapped: "swap", configured: "configure" }[step]),
          // What runs now, as late as can be: the sessions the probation holds to their state.
          beforeConfigure: async () => {
            baseline = await readBaseline(this.#probationDeps());
            steps.mark("baseline");
          },
        },
        (pending, { rendered, timeoutSeconds }) => {
          const before = baseline as BirdBaseline | null;
          if (!before) throw new Error("applyBirdConfig returned before reading the baseline");
          return this.#probation(pending, { payload, rendered, before, previous, timeoutSeconds, steps: steps.spent() });
        },
      );
      // Byte-identical to what BIRD runs (a re-issue of the same content): nothing to watch.
      const probationMs = loaded.outcome ?? 0;
      if (!loaded.configured) log.info("sync: BIRD already runs this configuration; configure skipped", { revision_id: payload.revision_id });

      const record: AppliedRecord = {
        revision_id: payload.revision_id,
        sequence: payload.sequence,
        digest: payload.digest,
        applied_at: new Date(this.#o.clock.now()).toISOString(),
      };
      await this.#confirmed.record(fetched.bytes, record, verified);
      this.#o.metrics.recordApplied(record);
      this.#o.reporter.setError(null);
      await this.#setRefused(null);
      this.#retryAttempt = 0;
      log.info("sync: applied", { revision_id: record.revision_id, sequence: record.sequence, probation_ms: probationMs });
      await this.#o.reporter.report("applied");
      this.#confirmed.indexPrefixes(record, verified);
      return "applied";
    } catch (error) {
      await this.#fail(error, trigger, desired, bytes);
      return "failed";
    }
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

  #verifyOptions(applied: AppliedRecord | null): Omit<VerifyOptions, "base" | "received"> {
    return {
      speakerId: this.#o.speakerId,
      tenantId: this.#o.tenantId,
      lastSequence: applied?.sequence ?? null,
      now: this.#o.clock.now(),
      maxBytes: this.#o.maxBundleBytes,
    };
  }

  /** verifyBundle; an unknown key first refreshes the pinned keys through their statements. */
  async #verify(received: ReceivedBundle, applied: AppliedRecord | null, base: KeptPrefixes | null): Promise<VerifiedKept> {
    const { state } = this.#o;
    const options = this.#verifyOptions(applied);
    const verify = async () => verifyKept(received, await state.readSigningKeys(), options, base);
    try {
      return await verify();
    } catch (error) {
      if (!(error instanceof BundleError) || error.code !== "unknown_key") throw error;
      const update = await updatePinnedKeys(await state.readSigningKeys(), await this.#o.client.signingKeys());
      if (update.added.length === 0 && update.retired.length === 0) throw error;
      await state.writeSigningKeys(update.keys);
      this.#o.log.info("signing keys updated", { added: update.added, retired: update.retired });
      return verify();
    }
  }

  /**
   * The configuration BIRD runs on probation: watched for the window, then confirmed; or, when
   * the verdict is no, reverted (throws `reverted`). Answers how long the probation took.
   */
  async #probation(
    pending: PendingApply,
    o: {
      payload: BundlePayload;
      rendered: RenderedConfig;
      before: BirdBaseline;
      previous: BundlePayload | null;
      timeoutSeconds: number;
      /** Milliseconds each step of this sync took so far, for the log. */
      steps: Record<string, number>;
    },
  ): Promise<number> {
    const { log, metrics, clock } = this.#o;
    const { payload, timeoutSeconds } = o;
    const configuredAt = clock.now();
    const windowMs = probationWindowMs(payload, this.#o.healthWaitMs, timeoutSeconds);
    const forceConfirm = payload.force_confirm === true;
    const checkController = payload.bird?.probation_check_controller !== false;
    // From here until confirm, BIRD reverts by itself if this process dies.
    log.info("sync: BIRD runs the new config on probation", {
      revision_id: payload.revision_id,
      sequence: payload.sequence,
      timeout_seconds: timeoutSeconds,
      window_seconds: windowMs / 1000,
      force_confirm: forceConfirm,
      check_controller: checkController,
      steps_ms: o.steps,
    });
    metrics.setProbation({ revision_id: payload.revision_id, since: new Date(configuredAt).toISOString() });
    let verdict: ProbationVerdict;
    try {
      verdict = await runProbation(this.#probationDeps(), {
        plan: planProbation({
          before: o.before.sessions,
          rendered: o.rendered.sessions,
          payload,
          previous: o.previous,
          checkSessions: !forceConfirm && windowMs > 0,
        }),
        windowMs,
        checkController,
        confirmBy: configuredAt + timeoutSeconds * 1000 - 1000,
        sampleMs: this.#o.probationSampleMs,
      });
      if (verdict.ok) await pending.confirm();
    } catch (error) {
      // Back to the confirmed files and config now, rather than when BIRD's timer runs out
      // (after a lost confirm answer too: the retry applies the bundle again).
      metrics.setProbation(null);
      await pending.undo().catch((e: unknown) => log.warn("configure undo failed; BIRD reverts on its timer", errorFields(e)));
      throw error;
    }
    const probationMs = clock.now() - configuredAt;
    metrics.setProbation(null);
    if (!verdict.ok) await this.#revert(verdict, pending.undo, o.before, configuredAt + timeoutSeconds * 1000, probationMs);
    metrics.recordProbation("confirmed", null, probationMs);
    return probationMs;
  }

  #probationDeps(): ProbationDeps {
    return { bird: this.#o.bird, clock: this.#o.clock, log: this.#o.log, controllerHealth: this.#o.controllerHealth };
  }

  /**
   * A probation that failed: the previous configuration goes back (`configure undo`, else BIRD's
   * timer), the agent waits until BIRD shows it running again, and the failure is thrown as
   * `reverted` with the check and the sessions, for the report.
   */
  async #revert(
    verdict: { check: string; sessions: string[]; message: string },
    undo: () => Promise<BirdReply>,
    baseline: BirdBaseline,
    timerEndsAt: number,
    probationMs: number,
  ): Promise<never> {
    const { log } = this.#o;
    log.warn("sync: probation failed; going back to the previous configuration", { check: verdict.check, sessions: verdict.sessions, reason: verdict.message });
    const result = await revertAndVerify(this.#probationDeps(), undo, baseline, timerEndsAt + 500);
    this.#o.metrics.recordProbation("reverted", verdict.check, probationMs);
    const back = result.verified
      ? `BIRD runs the previous configuration again (${result.how === "undo" ? "configure undo" : "its configure timeout"})`
      : "BIRD did not show the previous configuration running again; its configure timeout reverts it";
    throw new SyncError("reverted", `probation failed (${verdict.check}): ${verdict.message}; ${back}`, { check: verdict.check, sessions: verdict.sessions });
  }

  /**
   * At start: puts back on disk the files of the bundle BIRD last confirmed, when they differ.
   * After a crash between `configure timeout` and confirm, BIRD went back in memory but the
   * unconfirmed files stayed; without this, BIRD's next restart would load them.
   */
  async restoreConfirmedFiles(): Promise<boolean> {
    const applied = await this.#o.state.readApplied();
    const payload = await this.#confirmed.payload(applied);
    if (!applied || !payload) return false;
    const rendered = renderBirdConfig(payload, renderOptionsFor(this.#o.birdMode, this.#o.birdConfigPath, await this.#o.birdVersion?.()), this.#statics);
    const dir = dirname(this.#o.birdConfigPath);
    let restored = false;
    // The files hold peers' passwords: as applyBirdConfig writes them, BIRD's group reads, nobody else.
    const access = await birdReadable();
    for (const [name, text] of Object.entries(rendered.files)) {
      const path = join(dir, name);
      if ((await readFile(path, "utf8").catch(() => null)) === text) continue;
      await writeFileAtomic(path, text, access);
      restored = true;
    }
    if (restored) this.#o.log.warn("restored the files of the last confirmed revision", { revision_id: applied.revision_id });
    return restored;
  }
}
