import { basename, dirname } from "node:path";
import { BIRD_DEFAULTS, type BundlePayload } from "../bundle/index.js";
import type { Clock } from "../time.js";
import { type ApplyDeps, applyBirdConfig, type PendingApply } from "./apply.js";
import type { BirdControl } from "./birdc.js";
import { SyncError } from "./errors.js";
import { isStaticFileName, type RenderedConfig, renderBirdConfig, type StaticsCache } from "./render/render.js";
import { parseProtocolsAll } from "./status/parse-protocols.js";

// The one BIRD sequence the agent and the controller's local speaker both run: render →
// `bird -p` → `configure timeout N` → watch (health check or the agent's probation) → confirm
// or undo. What differs between them is only what happens between configure and confirm.

export interface BirdSequenceOptions {
  payload: BundlePayload;
  /** `include`: BIRD_CONFIG_PATH is included by the operator's bird.conf; `full`: it is bird.conf. */
  mode: "include" | "full";
  /** BIRD_CONFIG_PATH: the file the speaker owns; the other rendered files go beside it. */
  configPath: string;
  /** Scratch space, best on the same file system as configPath. */
  stagingDir: string;
  /** Runs once the config validated, just before the files are swapped and BIRD reconfigured. */
  beforeConfigure?: () => Promise<void>;
  /** The texts of the last render of this config path: only changed community sets are rendered again. */
  statics?: StaticsCache;
  /** The running BIRD's version (`show status`): the render writes what it accepts. Unknown: what every version accepts. */
  birdVersion?: string | null;
  /** Called as each step ends: `rendered`, then (when BIRD does not already run these bytes) `validated`, `swapped`, `configured`. */
  onStep?: (step: "rendered" | "validated" | "swapped" | "configured") => void;
}

/** What runs between `configure timeout` and the end: it confirms, or undoes and throws. */
export type Probation<T> = (pending: PendingApply, loaded: { rendered: RenderedConfig; timeoutSeconds: number }) => Promise<T>;

export interface LoadedConfig<T> {
  rendered: RenderedConfig;
  timeoutSeconds: number;
  /** False when BIRD already ran these bytes: nothing was configured and no probation ran. */
  configured: boolean;
  /** What the probation answered; null when nothing was configured. */
  outcome: T | null;
}

/** The render options of a speaker whose own file is `configPath`: static protocols split per community set. */
export function renderOptionsFor(mode: "include" | "full", configPath: string, birdVersion: string | null = null) {
  const name = basename(configPath);
  const common = { statics: "split" as const, birdVersion };
  return mode === "full" ? { mode, mainName: name, ...common } : { mode, includeName: name, ...common };
}

/** The bundle's `bird.configure_timeout_seconds` (default 30), held to 2 s … 1 h. */
export function configureTimeoutSeconds(payload: BundlePayload): number {
  const fallback = BIRD_DEFAULTS.configure_timeout_seconds;
  const value = Number(payload.bird?.configure_timeout_seconds ?? fallback);
  return Number.isFinite(value) ? Math.min(3600, Math.max(2, Math.floor(value))) : fallback;
}

/** Every rendered BGP protocol is listed by BIRD after configure; throws `health_check_failed` otherwise. */
export async function checkRenderedProtocols(bird: BirdControl, rendered: RenderedConfig, clock: Pick<Clock, "now">): Promise<void> {
  const reply = await bird.command("show protocols all");
  const running = new Set(parseProtocolsAll(reply.text, { now: new Date(clock.now()) }).protocols.map((p) => p.name));
  const missing = rendered.sessions.filter((s) => !running.has(s.protocol)).map((s) => s.protocol);
  if (missing.length) throw new SyncError("health_check_failed", `BIRD does not list ${missing.join(", ")} after configure`);
}

/** The local speaker's probation: the health check, then confirm; undo (and throw) when either fails. */
export function healthCheckThenConfirm(deps: Pick<ApplyDeps, "birdc" | "clock">): Probation<void> {
  return async (pending, { rendered }) => {
    try {
      await checkRenderedProtocols(deps.birdc, rendered, deps.clock);
      await pending.confirm();
    } catch (error) {
      await pending.undo().catch(() => undefined); // BIRD's own timer reverts it otherwise
      throw error;
    }
  };
}

/**
 * Renders the bundle, and unless BIRD already runs exactly these bytes, validates, configures
 * with a timeout and hands the pending config to `probation`, which confirms or undoes it.
 * Throws RenderError, BirdConfigError, BirdError, ApplyError or the probation's error; nothing
 * that throws changes what BIRD runs once BIRD's timer or the undo has gone back.
 */
export async function loadBirdConfig<T>(deps: ApplyDeps, o: BirdSequenceOptions, probation: Probation<T>): Promise<LoadedConfig<T>> {
  const rendered = renderBirdConfig(o.payload, renderOptionsFor(o.mode, o.configPath, o.birdVersion), o.statics);
  o.onStep?.("rendered");
  const timeoutSeconds = configureTimeoutSeconds(o.payload);
  const pending = await applyBirdConfig(deps, {
    files: rendered.files,
    entry: rendered.entry,
    mode: o.mode,
    configDir: dirname(o.configPath),
    stagingDir: o.stagingDir,
    timeoutSeconds,
    obsolete: (name) => isStaticFileName(rendered.include, name),
    routeFiles: (name) => isStaticFileName(rendered.include, name),
    ...(o.beforeConfigure ? { beforeConfigure: o.beforeConfigure } : {}),
    ...(o.onStep ? { onStep: o.onStep } : {}),
  });
  if (!pending.configured) return { rendered, timeoutSeconds, configured: false, outcome: null };
  return { rendered, timeoutSeconds, configured: true, outcome: await probation(pending, { rendered, timeoutSeconds }) };
}
