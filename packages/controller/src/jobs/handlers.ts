import type { JobHandler } from "./handler.js";

/** Every job type's handler; the ingest, apply and maintenance work adds theirs here. */
export function createJobHandlers(): JobHandler[] {
  return [];
}
