import type { ReportReasonJson, StatusErrorJson } from "@rlc/proto";
import type { BirdControl, ProcessRunner } from "@rlc/shared/bird";
import type { Clock } from "@rlc/shared/time";
import type { ControllerClient } from "./bundle/controller-client.js";
import type { DesiredRevision } from "./bundle/http-client.js";
import type { AgentMetrics } from "./http/metrics.js";
import type { Logger } from "./log.js";
import type { StateStore } from "./state.js";

// What the sync loop is given and asked (sync-loop.ts holds the order of a sync itself).

export interface SyncLoopOptions {
  client: Pick<ControllerClient, "latest" | "fetchBundle" | "signingKeys">;
  state: StateStore;
  reporter: { report(reason: ReportReasonJson): Promise<boolean>; setError(error: StatusErrorJson | null): void };
  bird: BirdControl;
  runner: ProcessRunner;
  birdBin?: string;
  /**
   * The running BIRD's version (BirdVersionWatch): the render writes what that version accepts.
   * Absent, or null while BIRD does not answer: what every supported version accepts.
   */
  birdVersion?: () => Promise<string | null>;
  metrics: AgentMetrics;
  clock: Clock;
  log: Logger;
  speakerId: string;
  tenantId: string;
  birdMode: "include" | "full";
  /** The file the agent owns (BIRD_CONFIG_PATH); the other rendered files go beside it. */
  birdConfigPath: string;
  stagingDir: string;
  /**
   * The shortest probation window this router accepts (RL_HEALTH_WAIT_SECONDS); the bundle's
   * `bird.confirm_after_seconds` sets it otherwise.
   */
  healthWaitMs: number;
  /**
   * One round trip to the controller (its HTTP health route), for the probation's controller
   * check; absent = not checked.
   */
  controllerHealth?: (timeoutMs: number) => Promise<void>;
  /** Between two looks at the sessions during the probation. Default 500 ms. */
  probationSampleMs?: number;
  maxBundleBytes?: number;
  /** Backoff of the retries after a passing failure. Default 2 s doubling to 5 min. */
  retry?: { baseMs: number; maxMs: number };
  random?: () => number;
}

/** Why a sync was asked for, and what the asker knows of the desired revision. */
export interface SyncTrigger {
  reason: "start" | "watch" | "nats" | "poll" | "retry" | "manual";
  /** When absent, the loop asks the controller (`revisions/latest`). */
  desired?: DesiredRevision;
}

/** Milliseconds between marks, per step name (a step marked twice, as a fetch after a refused delta, adds up). */
export function stepTimer(clock: Clock) {
  let last = clock.now();
  const spent: Record<string, number> = {};
  return {
    mark(step: string) {
      const now = clock.now();
      spent[step] = (spent[step] ?? 0) + (now - last);
      last = now;
    },
    spent: () => ({ ...spent }),
  };
}
