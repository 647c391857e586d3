import type { Clock } from "../time.js";
import type { BirdControl } from "./birdc.js";
import { type ChangeOptions, validateChange } from "./change.js";
import { type ConfigureOptions, configureBird } from "./configure.js";
import { nothingPending, type PendingApply } from "./confirm.js";
import { stageFiles } from "./swap-files.js";
import type { ProcessRunner } from "./validate.js";

export { ApplyError, type ApplyErrorCode } from "./errors.js";
export type { PendingApply };

export interface ApplyDeps {
  birdc: BirdControl;
  runner: ProcessRunner;
  clock: Clock;
  /** Default `bird` (from PATH). */
  birdBin?: string;
}

export type ApplyOptions = ChangeOptions & ConfigureOptions;

/**
 * Validate → stage → configure, the three middle steps of the sequence one after another, for a
 * caller with nothing to do between them (sequence.ts calls them one by one). Validation runs on
 * a scratch copy, so a config BIRD refuses never touches the running files (throws
 * BirdConfigError). Only the files whose bytes changed are swapped in, each by rename, the entry
 * last; when none changed, BIRD already runs this config and nothing happens (`configured:
 * false`). When `configure` fails the previous files are put back, so the files on disk always
 * match what BIRD runs or is about to revert to. The caller watches BIRD for the probation window
 * and then confirms or undoes.
 *
 * Note: when BIRD reverts on its own (nobody confirmed), it goes back in memory only; the new
 * files stay on disk until the next apply or `undo()`.
 */
export async function applyBirdConfig(deps: ApplyDeps, options: ApplyOptions): Promise<PendingApply> {
  const change = await validateChange(deps, options);
  if (!change) return nothingPending();
  const staged = await stageFiles(change);
  return configureBird(deps, staged, options);
}
