import { type BirdReply, birdDialect, parseShowStatus } from "@rlc/shared/bird";
import { errorFields } from "../log.js";
import type { BirdBaseline, ProbationDeps } from "./baseline.js";

// A probation that said no: the previous configuration back (`configure undo`, else BIRD's own
// timer), and the agent waits until BIRD shows it running again.

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
