import { confirmOrUndo, type PendingApply, parseProtocolsAll, type RenderedConfig, SyncError } from "@rlc/shared/bird";
import { BIRD_DEFAULTS, type BundlePayload, PROBATION_CONFIRM_MARGIN_SECONDS } from "@rlc/shared/bundle";
import type { AgentMetrics } from "../http/metrics.js";
import { errorFields } from "../log.js";
import { type BirdBaseline, type ProbationDeps, readBaseline } from "./baseline.js";
import { revertAndVerify } from "./revert.js";
import { type PlanInput, type ProbationPlan, type ProbationVerdict, ProbationWatch, planProbation } from "./rules.js";

// The probation between `configure timeout` and `configure confirm`: watch BIRD for the window,
// judge (rules.ts), then confirm; or, when the verdict is no, put the previous configuration back
// and see that BIRD runs it again (revert.ts).

export interface ProbationOptions extends ProbationDeps {
  metrics: AgentMetrics;
  /** The shortest window this router accepts (RL_HEALTH_WAIT_SECONDS). */
  healthWaitMs: number;
  /** Between two looks at the sessions. Default 500 ms. */
  sampleMs?: number;
}

/** What one probation watches: the new configuration and what ran before it. */
export interface ProbationInput {
  payload: BundlePayload;
  rendered: RenderedConfig;
  baseline: BirdBaseline;
  /** The bundle BIRD ran until now, when the agent has it. */
  previous: BundlePayload | null;
  /** Both bundles' prefixes counted from the agent's columns, when it holds them (PlanInput.tallies). */
  tallies?: PlanInput["tallies"];
  timeoutSeconds: number;
  /** Milliseconds each step of this sync took so far, for the log. */
  steps: Record<string, number>;
}

/** A watch ended: its verdict, and when BIRD took the configuration (for the confirm or the revert). */
export interface Watched {
  verdict: ProbationVerdict;
  since: number;
  input: ProbationInput;
}

/** The sync's probation steps: the baseline before configure, the watch after it, then confirm or revert. */
export class Probation {
  readonly #o: ProbationOptions;

  constructor(options: ProbationOptions) {
    this.#o = options;
  }

  /** What runs now, read just before the stage step: the sessions the watch holds to their state. */
  baseline(): Promise<BirdBaseline> {
    return readBaseline(this.#o);
  }

  /**
   * Watches BIRD for the window and judges. A watch that cannot finish (BIRD stops answering)
   * goes back to the confirmed files and config at once, rather than when BIRD's timer runs out,
   * and throws.
   */
  async watch(pending: PendingApply, input: ProbationInput): Promise<Watched> {
    const { log, metrics, clock } = this.#o;
    const { payload, timeoutSeconds } = input;
    const since = clock.now();
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
      steps_ms: input.steps,
    });
    metrics.setProbation({ revision_id: payload.revision_id, since: new Date(since).toISOString() });
    try {
      const plan = planProbation({
        before: input.baseline.sessions,
        rendered: input.rendered.sessions,
        payload,
        previous: input.previous,
        ...(input.tallies ? { tallies: input.tallies } : {}),
        checkSessions: !forceConfirm && windowMs > 0,
      });
      const verdict = await this.#judge(plan, windowMs, checkController, since + timeoutSeconds * 1000 - 1000);
      return { verdict, since, input };
    } catch (error) {
      metrics.setProbation(null);
      await pending.undo().catch((e: unknown) => log.warn("configure undo failed; BIRD reverts on its timer", errorFields(e)));
      throw error;
    }
  }

  /**
   * `configure confirm` after a yes; a confirm that fails (after a lost answer too: the retry
   * applies the bundle again) is undone at once and thrown. Answers how long the probation took.
   */
  async confirm(pending: PendingApply, watched: Watched): Promise<number> {
    const { log, metrics, clock } = this.#o;
    try {
      await confirmOrUndo(pending, (e) => log.warn("configure undo failed; BIRD reverts on its timer", errorFields(e)));
    } finally {
      metrics.setProbation(null);
    }
    const probationMs = clock.now() - watched.since;
    metrics.recordProbation("confirmed", null, probationMs);
    return probationMs;
  }

  /**
   * After a no: the previous configuration goes back (`configure undo`, else BIRD's timer), the
   * agent waits until BIRD shows it running again, and the failure is thrown as `reverted` with
   * the check and the sessions, for the report.
   */
  async revert(pending: PendingApply, watched: Watched): Promise<never> {
    const { log, metrics, clock } = this.#o;
    const { verdict } = watched;
    if (verdict.ok) throw new TypeError("a probation that said yes is confirmed, not reverted");
    const probationMs = clock.now() - watched.since;
    metrics.setProbation(null);
    log.warn("sync: probation failed; going back to the previous configuration", { check: verdict.check, sessions: verdict.sessions, reason: verdict.message });
    const timerEndsAt = watched.since + watched.input.timeoutSeconds * 1000;
    const result = await revertAndVerify(this.#o, pending.undo, watched.input.baseline, timerEndsAt + 500);
    metrics.recordProbation("reverted", verdict.check, probationMs);
    const back = result.verified
      ? `BIRD runs the previous configuration again (${result.how === "undo" ? "configure undo" : "its configure timeout"})`
      : "BIRD did not show the previous configuration running again; its configure timeout reverts it";
    throw new SyncError("reverted", `probation failed (${verdict.check}): ${verdict.message}; ${back}`, { check: verdict.check, sessions: verdict.sessions });
  }

  /** Watches for the window, then judges; a BIRD that stops answering throws. */
  async #judge(plan: ProbationPlan, windowMs: number, checkController: boolean, confirmBy: number): Promise<ProbationVerdict> {
    const { bird, clock } = this.#o;
    const watch = new ProbationWatch(plan);
    const end = clock.now() + windowMs;
    for (;;) {
      const parsed = parseProtocolsAll((await bird.command("show protocols all")).text, { now: new Date(clock.now()), timeZone: this.#o.timeZone });
      const early = watch.observe(
        parsed.sessions,
        parsed.protocols.map((p) => p.name),
      );
      if (early) return early;
      const left = end - clock.now();
      if (left <= 0) break;
      await clock.sleep(Math.min(this.#o.sampleMs ?? 500, left));
    }
    let controllerOk: boolean | null = null;
    if (checkController && this.#o.controllerHealth) controllerOk = await this.#reachController(confirmBy);
    return watch.verdict(controllerOk, Math.round(windowMs / 1000));
  }

  /** Tries until an answer comes or the time left before the confirm runs out (at most 3 s). */
  async #reachController(confirmBy: number): Promise<boolean> {
    const { clock, log } = this.#o;
    const until = Math.min(clock.now() + 3000, confirmBy - 500);
    for (;;) {
      const left = until - clock.now();
      if (left <= 0) return false;
      try {
        await this.#o.controllerHealth?.(Math.max(200, Math.min(1500, left)));
        return true;
      } catch (error) {
        log.warn("probation: the controller did not answer", errorFields(error));
        const pause = Math.min(250, until - clock.now());
        if (pause > 0) await clock.sleep(pause);
      }
    }
  }
}

/**
 * The probation window: the bundle's `confirm_after_seconds` (default 10), at least this
 * router's RL_HEALTH_WAIT_SECONDS, and always ending PROBATION_CONFIRM_MARGIN_SECONDS before
 * BIRD's timer (the settings refuse less; an older controller's bundle is cut to fit).
 */
export function probationWindowMs(payload: BundlePayload, localFloorMs: number, timeoutSeconds: number): number {
  const fallback = BIRD_DEFAULTS.confirm_after_seconds;
  const value = Number(payload.bird?.confirm_after_seconds ?? fallback);
  const seconds = Number.isFinite(value) ? Math.min(300, Math.max(0, value)) : fallback;
  return Math.min(Math.max(seconds * 1000, localFloorMs), Math.max(0, (timeoutSeconds - PROBATION_CONFIRM_MARGIN_SECONDS) * 1000));
}
