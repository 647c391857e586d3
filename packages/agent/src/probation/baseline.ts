import { type BgpSessionLive, type BirdControl, parseProtocolsAll, parseShowStatus } from "@rlc/shared/bird";
import type { Clock } from "@rlc/shared/time";
import type { Logger } from "../log.js";

/** What the probation asks BIRD (and, once, the controller) with. */
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

/** What runs now, read as late as can be (just before the stage step): the sessions the probation holds to their state. */
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
