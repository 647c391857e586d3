import { type BgpSessionLive, type BirdControl, type BirdReply, birdDialect, parseProtocolsAll, parseShowStatus } from "@rlc/shared/bird";
import { BIRD_DEFAULTS, type BundlePayload, PROBATION_CONFIRM_MARGIN_SECONDS } from "@rlc/shared/bundle";
import type { Clock } from "@rlc/shared/time";
import { errorFields, type Logger } from "./log.js";
import { type ProbationPlan, type ProbationVerdict, ProbationWatch } from "./status/probation-rules.js";

// The probation between `configure timeout` and `configure confirm`: watch BIRD for the window,
// judge (status/probation-rules.ts), and when the verdict is no, put the previous configuration
// back and see that BIRD runs it again.

export interface ProbationDeps {
  bird: BirdControl;
  clock: Clock;
  log: Logger;
  /** One round trip to the controller; throws when it cannot be reached. */
  controllerHealth?: (timeoutMs: number) => Promise<void>;
  timeZone?: "local" | "utc";
}

/** What BIRD said just before `configure timeout`. */
export interface BirdBaseline {
  /** `Last reconfiguration on` of `show status`: BIRD shows it again once it runs the previous config. */
  lastReconfiguration: string | null;
  /** BIRD's version from the same `show status`: what a revert looks like depends on it. */
  version: string | null;
  sessions: BgpSessionLive[];
}

export interface ProbationRun {
  plan: ProbationPlan;
  windowMs: number;
  checkController: boolean;
  /** Clock time by which `configure confirm` must be sent (BIRD's timer, less a second). */
  confirmBy: number;
  /** Between two looks at the sessions. Default 500 ms. */
  sampleMs?: number;
}

export async function readBaseline(deps: Pick<ProbationDeps, "bird" | "clock" | "timeZone">): Promise<BirdBaseline> {
  const status = await deps.bird.command("show status");
  const protocols = await deps.bird.command("show protocols all");
  const shown = parseShowStatus(status.text, { timeZone: deps.timeZone });
  return {
    lastReconfiguration: shown.last_reconfiguration,
    version: shown.version,
    sessions: parseProtocolsAll(protocols.text, { now: new Date(deps.clock.now()), timeZone: deps.timeZone }).sessions,
  };
}

/** Watches for the window, then judges; a BIRD that stops answering throws (the caller undoes). */
export async function runProbation(deps: ProbationDeps, run: ProbationRun): Promise<ProbationVerdict> {
  const { bird, clock } = deps;
  const watch = new ProbationWatch(run.plan);
  const end = clock.now() + run.windowMs;
  for (;;) {
    const reply = await bird.command("show protocols all");
    const parsed = parseProtocolsAll(reply.text, { now: new Date(clock.now()), timeZone: deps.timeZone });
    const early = watch.observe(
      parsed.sessions,
      parsed.protocols.map((p) => p.name),
    );
    if (early) return early;
    const left = end - clock.now();
    if (left <= 0) break;
    await clock.sleep(Math.min(run.sampleMs ?? 500, left));
  }
  let controllerOk: boolean | null = null;
  if (run.checkController && deps.controllerHealth) controllerOk = await reachController(deps, run.confirmBy);
  return watch.verdict(controllerOk, Math.round(run.windowMs / 1000));
}

/** Tries until an answer comes or the time left before the confirm runs out (at most 3 s). */
async function reachController(deps: ProbationDeps, confirmBy: number): Promise<boolean> {
  const { clock } = deps;
  const until = Math.min(clock.now() + 3000, confirmBy - 500);
  for (;;) {
    const left = until - clock.now();
    if (left <= 0) return false;
    try {
      await deps.controllerHealth?.(Math.max(200, Math.min(1500, left)));
      return true;
    } catch (error) {
      deps.log.warn("probation: the controller did not answer", errorFields(error));
      const pause = Math.min(250, until - clock.now());
      if (pause > 0) await clock.sleep(pause);
    }
  }
}

export interface RevertResult {
  /** `undo`: BIRD took `configure undo`; `timer`: it had gone back already or refused, and its timer did it. */
  how: "undo" | "timer";
  /** BIRD shows the previous configuration's `Last reconfiguration` again. */
  verified: boolean;
}

/**
 * BIRD 2 keeps the load time with each configuration, so `configure undo` and its timer's revert
 * show the previous configuration's time again. BIRD 3 stamps the revert itself with a new time
 * (captured: status/fixtures/undo-3.1.8.txt, timer-3.1.8.txt).
 */
export const birdStampsReverts = (version: string | null) => birdDialect(version).stampsReverts;

/** Two readings of one reconfiguration can differ by a millisecond (BIRD's monotonic clock shown as wall time). */
const SAME_RECONFIGURATION_MS = 5;

/**
 * `configure undo` at once (the previous files go back first); when BIRD refuses it, waits for
 * BIRD's own timer. Then waits until `show status` shows the previous configuration running:
 * on BIRD 2 its load time comes back; on BIRD 3 a reconfiguration later than the one on
 * probation is the revert (nothing else configures BIRD meanwhile), and `Nothing to do` to the
 * undo says the timer already did it.
 */
export async function revertAndVerify(
  deps: ProbationDeps,
  undo: () => Promise<BirdReply>,
  baseline: BirdBaseline,
  timerEndsAt: number,
  verifyMs = 15_000,
): Promise<RevertResult> {
  const { clock, log } = deps;
  const stamps = birdStampsReverts(baseline.version);
  const onProbation = stamps ? await reconfiguredAt(deps).catch(() => null) : null;
  let how: RevertResult["how"] = "undo";
  try {
    const reply = await undo();
    // 0019 "Nothing to do": the timer had already put the old configuration back.
    if (reply.code === 19) how = "timer";
    if (reply.code === 19 && stamps) return { how, verified: true };
  } catch (error) {
    how = "timer";
    log.warn("configure undo refused; BIRD's timer reverts", errorFields(error));
    const wait = timerEndsAt - clock.now();
    if (wait > 0) await clock.sleep(wait);
  }
  const back = stamps
    ? onProbation === null
      ? null
      : (shown: string | null) => shown !== null && Date.parse(shown) > Date.parse(onProbation) + SAME_RECONFIGURATION_MS
    : baseline.lastReconfiguration === null
      ? null
      : (shown: string | null) => shown === baseline.lastReconfiguration;
  if (back === null) return { how, verified: false };
  const deadline = clock.now() + verifyMs;
  for (;;) {
    try {
      if (back(await reconfiguredAt(deps))) return { how, verified: true };
    } catch (error) {
      log.warn("BIRD did not answer after the undo", errorFields(error));
    }
    if (clock.now() >= deadline) return { how, verified: false };
    await clock.sleep(200);
  }
}

/** `Last reconfiguration` of `show status`, as RFC 3339. */
async function reconfiguredAt(deps: ProbationDeps): Promise<string | null> {
  return parseShowStatus((await deps.bird.command("show status")).text, { timeZone: deps.timeZone }).last_reconfiguration;
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
