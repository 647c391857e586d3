import { basename, dirname } from "node:path";
import { BIRD_DEFAULTS, type BundlePayload } from "../bundle/index.js";
import type { Clock } from "../time.js";
import type { ApplyDeps } from "./apply.js";
import type { BirdControl } from "./birdc.js";
import { type ChangeOptions, type ValidatedChange, validateChange } from "./change.js";
import { configureBird } from "./configure.js";
import { confirmOrUndo } from "./confirm.js";
import { SyncError } from "./errors.js";
import { isStaticFileName, type RenderedConfig, renderBirdConfig, type SectionSource, type StaticsCache } from "./render/render.js";
import { parseProtocolsAll } from "./status/parse-protocols.js";
import { differingFiles, stageFiles, writeDiffering } from "./swap-files.js";
import type { WrittenFiles } from "./written-files.js";

// The one BIRD sequence the agent and the controller's local speaker both run, as steps each
// caller calls one after another:
//
//   1. render      renderForTarget       bundle → config texts
//   2. validate    validateRendered      what differs from what runs; `bird -p` on a scratch copy
//   3. stage       stageFiles            the running files aside, the new ones in
//   4. configure   configureBird         `configure timeout N`, then wait until BIRD answers
//   5. watch       the caller's own      the agent's probation; the local speaker's health check
//   6. confirm     confirmOrUndo         `configure confirm`, or undo at once when that fails
//
// A step that throws leaves BIRD on what it ran before: nothing is swapped before `bird -p`
// passed, and a failed configure puts the files back. loadBirdConfig below is the local
// speaker's whole sequence.

/** Where a speaker's config goes. */
export interface BirdTarget {
  /** `include`: BIRD_CONFIG_PATH is included by the operator's bird.conf; `full`: it is bird.conf. */
  mode: "include" | "full";
  /** BIRD_CONFIG_PATH: the file the speaker owns; the other rendered files go beside it. */
  configPath: string;
  /** Scratch space, best on the same file system as configPath. */
  stagingDir: string;
  /** The running BIRD's version (`show status`): the render writes what it accepts. Unknown: what every version accepts. */
  birdVersion?: string | null;
  /**
   * What this process last wrote or read beside configPath (a WrittenFiles of that directory,
   * kept across applies): the files it knows unchanged are not read again.
   */
  written?: WrittenFiles;
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

/** 1. Render: the bundle's config texts; `statics` (the last render's) spares the community sets that did not change. */
export function renderForTarget(
  payload: BundlePayload,
  target: Pick<BirdTarget, "mode" | "configPath" | "birdVersion">,
  statics?: StaticsCache,
  section?: SectionSource,
): RenderedConfig {
  return renderBirdConfig(payload, renderOptionsFor(target.mode, target.configPath, target.birdVersion ?? null), statics, section);
}

/** What the validate step is given for a rendered config: the files, where they go, which hold routes. */
export function changeFor(target: BirdTarget, rendered: RenderedConfig): ChangeOptions {
  const statics = (name: string) => isStaticFileName(rendered.include, name);
  return {
    files: rendered.files,
    entry: rendered.entry,
    mode: target.mode,
    configDir: dirname(target.configPath),
    stagingDir: target.stagingDir,
    written: target.written,
    obsolete: statics,
    routeFiles: statics,
    ...(rendered.checks ? { checkTexts: rendered.checks } : {}),
  };
}

/** 2. Validate: null when BIRD already runs exactly these bytes (nothing to stage or configure). */
export function validateRendered(deps: Pick<ApplyDeps, "runner" | "birdBin">, target: BirdTarget, rendered: RenderedConfig): Promise<ValidatedChange | null> {
  return validateChange(deps, changeFor(target, rendered));
}

/**
 * What restoreRendered found: the rendered files (`unchanged`); the same configuration in the
 * words of another BIRD version (`rewritten`: what an agent before the render by BIRD version
 * wrote, or one for a BIRD 2.0 or 3.0 upgraded since); anything else (`restored`: a crash
 * left an unconfirmed config, a file was edited or removed).
 */
export type RestoreOutcome = "unchanged" | "rewritten" | "restored";

/**
 * Puts the rendered files on disk where they differ, without validating or configuring: the
 * files of the configuration BIRD confirmed last. `otherVersion` renders that configuration for
 * no BIRD version in particular (what every version accepts); it is rendered only when files
 * differ, and when it is what they hold, the write is a `rewritten`, not a `restored`.
 */
export async function restoreRendered(
  target: Pick<BirdTarget, "configPath" | "written">,
  rendered: RenderedConfig,
  otherVersion?: () => RenderedConfig,
): Promise<RestoreOutcome> {
  const dir = dirname(target.configPath);
  const differing = differingFiles(dir, rendered.files, target.written);
  if (!differing.length) return "unchanged";
  const other = otherVersion?.().files;
  const rewritten = other !== undefined && differing.every((name) => name in other) && !differingFiles(dir, pick(other, differing)).length;
  await writeDiffering(dir, rendered.files, target.written, differing);
  return rewritten ? "rewritten" : "restored";
}

const pick = <T>(files: Record<string, T>, names: string[]): Record<string, T> => Object.fromEntries(names.map((name) => [name, files[name] as T]));

/** Every rendered BGP protocol is listed by BIRD after configure; throws `health_check_failed` otherwise. */
export async function checkRenderedProtocols(bird: BirdControl, rendered: RenderedConfig, clock: Pick<Clock, "now">): Promise<void> {
  const reply = await bird.command("show protocols all");
  const running = new Set(parseProtocolsAll(reply.text, { now: new Date(clock.now()) }).protocols.map((p) => p.name));
  const missing = rendered.sessions.filter((s) => !running.has(s.protocol)).map((s) => s.protocol);
  if (missing.length) throw new SyncError("health_check_failed", `BIRD does not list ${missing.join(", ")} after configure`);
}

export interface BirdSequenceOptions extends BirdTarget {
  payload: BundlePayload;
  /** The texts of the last render of this config path: only changed community sets are rendered again. */
  statics?: StaticsCache;
}

export interface LoadedConfig {
  rendered: RenderedConfig;
  timeoutSeconds: number;
  /** False when BIRD already ran these bytes: nothing was validated, configured or checked. */
  configured: boolean;
}

/**
 * The local speaker's sequence: the six steps in order, its watch the health check (every
 * rendered BGP protocol listed). Throws RenderError, BirdConfigError, BirdError, ApplyError or
 * `health_check_failed`; nothing that throws changes what BIRD runs once the undo (or BIRD's
 * timer) has gone back.
 */
export async function loadBirdConfig(deps: ApplyDeps, o: BirdSequenceOptions): Promise<LoadedConfig> {
  const rendered = renderForTarget(o.payload, o, o.statics);
  const timeoutSeconds = configureTimeoutSeconds(o.payload);
  const change = await validateRendered(deps, o, rendered);
  if (!change) return { rendered, timeoutSeconds, configured: false };
  const staged = await stageFiles(change);
  const pending = await configureBird(deps, staged, { timeoutSeconds });
  try {
    await checkRenderedProtocols(deps.birdc, rendered, deps.clock);
  } catch (error) {
    await pending.undo().catch(() => undefined); // BIRD's own timer reverts it otherwise
    throw error;
  }
  await confirmOrUndo(pending);
  return { rendered, timeoutSeconds, configured: true };
}
