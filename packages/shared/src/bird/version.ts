import type { BirdControl, BirdReply } from "./birdc.js";
import { parseShowStatus } from "./status/parse-status.js";

// What differs between the BIRD versions the agent supports (2.0 to 3.x), in one place: the
// render and the agent ask here instead of testing version strings themselves. Found by running
// each version (2.0.12, 2.17.6, 3.1.8) on the same configs and by BIRD's NEWS:
//
// - `authentication md5;` in a BGP protocol with a password: 2.17 and 3.1 added it (TCP-AO came
//   with them) and warn "Missing authentication option, assuming MD5" without it; 2.0.12 and 3.0
//   refuse it as a syntax error.
// - `configure undo` and BIRD's timer revert: BIRD 3 gives the revert a new `Last
//   reconfiguration` time, BIRD 2 shows the previous configuration's again.
// - What the render does not need a rule for: `configure` re-runs a changed filter on every
//   version with the session staying up, so the agent never sends `reload` (BIRD 3's
//   `reload filters`, 2's `reload [in|out]`); the render sets no BGP role, so RFC 9234's
//   attribute (`bgp_otc` on 2.0.11+ and 3.0.1+, `otc` on 3.0.0 alone) is not written.

export interface BirdVersion {
  major: number;
  minor: number;
  patch: number;
}

/** `2.0.12`, `2.17.6`, `3.1.8`, `3.0alpha2` → numbers; null when it is not a version. */
export function parseBirdVersion(text: string | null | undefined): BirdVersion | null {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(text ?? "");
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

/** What the agent renders and expects for one BIRD version. */
export interface BirdDialect {
  /** BIRD accepts `authentication md5;` beside `password` (2.17+, 3.1+). */
  authenticationOption: boolean;
  /** `configure undo` and the timer's revert show a new `Last reconfiguration` (3.x). */
  stampsReverts: boolean;
}

const atLeast = (v: BirdVersion, major: number, minor: number) => v.major > major || (v.major === major && v.minor >= minor);

/**
 * The dialect of `version` (as `show status` names it). An unknown version gets what every
 * supported version accepts: the render of BIRD 2.0.
 */
export function birdDialect(version: string | null | undefined): BirdDialect {
  const v = parseBirdVersion(version);
  if (!v) return { authenticationOption: false, stampsReverts: false };
  return {
    authenticationOption: v.major === 2 ? v.minor >= 17 : atLeast(v, 3, 1),
    stampsReverts: v.major >= 3,
  };
}

/**
 * The version of the BIRD behind `inner`, learnt from every `show status` reply that passes
 * through (the agent's status reports, the probation's baseline), asked for only when none has
 * been seen: the render needs it before the first configure, and asking on every sync would add
 * a command to each.
 */
export class BirdVersionWatch implements BirdControl {
  readonly #inner: BirdControl;
  #version: string | null = null;

  constructor(inner: BirdControl) {
    this.#inner = inner;
  }

  async command(command: string, options?: { timeoutMs?: number }): Promise<BirdReply> {
    const reply = await this.#inner.command(command, options);
    if (command === "show status") this.#version = parseShowStatus(reply.text).version ?? this.#version;
    return reply;
  }

  close(): void {
    this.#inner.close();
  }

  /** The version last seen; asks `show status` when there is none yet. Null when BIRD does not answer. */
  async version(): Promise<string | null> {
    if (this.#version === null) await this.command("show status").catch(() => undefined);
    return this.#version;
  }
}
