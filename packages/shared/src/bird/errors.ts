import { BundleError } from "../bundle/index.js";
import { CodedError } from "../coded-error.js";
import { BirdError } from "./birdc.js";
import { RenderError } from "./render/values.js";
import { BirdConfigError } from "./validate.js";

export type ApplyErrorCode = "bird_reload_failed" | "bird_reverted";

/** `configure` refused by a BIRD shutting down, or a confirm that came after BIRD's timer. */
export class ApplyError extends CodedError<ApplyErrorCode> {
  override name = "ApplyError";
}

/** A failure found after `configure`: BIRD lacks a rendered protocol, or a probation reverted. */
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
   * renders to): the speaker waits for a different one. False for conditions that pass by
   * themselves (BIRD unreachable, busy): they are retried with backoff.
   */
  permanent: boolean;
}

/**
 * The failures of the BIRD sequence (bundle, render, `bird -p`, configure, health check,
 * probation) as reported in a status report; null for anything else, which the caller maps.
 */
export function classifyBirdError(error: unknown): ClassifiedError | null {
  if (error instanceof BundleError) return { code: error.code, message: error.message, permanent: true };
  if (error instanceof RenderError) return { code: error.code, message: error.message, permanent: true };
  // The excerpt carries BIRD's file:line:col, the offending line and a caret under the column.
  if (error instanceof BirdConfigError) return { code: error.code, message: error.excerpt, permanent: true };
  if (error instanceof SyncError) {
    return { code: error.code, message: error.message, permanent: true, ...(error.check ? { check: error.check, sessions: error.sessions } : {}) };
  }
  if (error instanceof ApplyError) return { code: error.code, message: error.message, permanent: false };
  if (error instanceof BirdError) return { code: error.code, message: error.message, permanent: false };
  return null;
}
