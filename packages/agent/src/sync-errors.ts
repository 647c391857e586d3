import { BundleError } from "@rlc/shared/bundle";
import { ApplyError } from "./bird/apply.js";
import { BirdError } from "./bird/birdc.js";
import { BirdConfigError } from "./bird/validate.js";
import { ControllerError } from "./bundle/http-client.js";
import { RenderError } from "./render/values.js";
import { StateError } from "./state.js";

/** A failure the sync loop finds itself (the other parts throw their own classes). */
export class SyncError extends Error {
  override name = "SyncError";
  readonly code: "health_check_failed" | "reverted";
  /** For `reverted`: the probation check that failed and the BGP protocols it concerned. */
  readonly check: string | null;
  readonly sessions: string[];

  constructor(code: "health_check_failed" | "reverted", message: string, detail: { check?: string; sessions?: string[] } = {}) {
    super(message);
    this.code = code;
    this.check = detail.check ?? null;
    this.sessions = detail.sessions ?? [];
  }
}

export interface ClassifiedError {
  /** The stable word reported to the controller (agent.proto StatusError.code). */
  code: string;
  message: string;
  /** For `reverted`: the failed probation check and its sessions. */
  check?: string;
  sessions?: string[];
  /**
   * True when trying the same bundle again cannot help (it was refused, or BIRD refused what it
   * renders to): the agent waits for a different one. False for conditions that pass by
   * themselves (controller or BIRD unreachable): the agent retries with backoff.
   */
  permanent: boolean;
}

export function classifyError(error: unknown): ClassifiedError {
  if (error instanceof BundleError) return { code: error.code, message: error.message, permanent: true };
  if (error instanceof RenderError) return { code: error.code, message: error.message, permanent: true };
  // The excerpt carries BIRD's file:line:col, the offending line and a caret under the column.
  if (error instanceof BirdConfigError) return { code: error.code, message: error.excerpt, permanent: true };
  if (error instanceof SyncError) {
    return { code: error.code, message: error.message, permanent: true, ...(error.check ? { check: error.check, sessions: error.sessions } : {}) };
  }
  if (error instanceof ApplyError) return { code: error.code, message: error.message, permanent: false };
  if (error instanceof BirdError) return { code: error.code, message: error.message, permanent: false };
  if (error instanceof ControllerError) return { code: "fetch_failed", message: `${error.code}: ${error.message}`, permanent: false };
  if (error instanceof StateError) return { code: "state_failed", message: error.message, permanent: false };
  return { code: "internal", message: error instanceof Error ? error.message : String(error), permanent: false };
}
