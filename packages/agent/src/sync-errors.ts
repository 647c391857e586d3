import { type ClassifiedError, classifyBirdError, SyncError } from "@rlc/shared/bird";
import { ControllerError } from "./bundle/http-client.js";
import { StateError } from "./state.js";

export { type ClassifiedError, SyncError };

/** The BIRD sequence's failures (shared with the local speaker), then the agent's own. */
export function classifyError(error: unknown): ClassifiedError {
  const bird = classifyBirdError(error);
  if (bird) return bird;
  if (error instanceof ControllerError) return { code: "fetch_failed", message: `${error.code}: ${error.message}`, permanent: false };
  if (error instanceof StateError) return { code: "state_failed", message: error.message, permanent: false };
  return { code: "internal", message: error instanceof Error ? error.message : String(error), permanent: false };
}
