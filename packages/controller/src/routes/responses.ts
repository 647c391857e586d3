import { Problem } from "@rlc/shared/schemas";
import type { Outcome } from "../plugins/types.js";

const descriptions: Record<number, string> = {
  400: "Invalid request (`validation_failed`, `invalid_cursor`, `invalid_json`)",
  401: "No valid Bearer key (`unauthenticated`)",
  403: "The key's role does not allow this (`forbidden`)",
  404: "No such resource in the caller's tenant (`not_found`)",
  409: "Conflict (`conflict`, `idempotency_in_flight`)",
  413: "Too large (`payload_too_large`, `file_too_large`)",
  415: "Unsupported content type (`unsupported_media_type`)",
  422: "Unprocessable (`idempotency_key_reused`, …)",
  429: "Too many requests (`rate_limited`; `too_many_jobs` when the tenant's job queue is full), with Retry-After",
  503: "Unavailable",
};

/** Problem+json answers for the OpenAPI document (bodies are written by the error handler). */
export function problems(...statuses: number[]) {
  const out: Record<number, { description: string; content: { "application/problem+json": { schema: typeof Problem } } }> = {};
  for (const s of statuses) out[s] = { description: descriptions[s] ?? "Error", content: { "application/problem+json": { schema: Problem } } };
  return out;
}

/** The errors every authenticated route can answer. */
export const authProblems = problems(400, 401, 403);
/** …and those of a route that changes something. */
export const writeProblems = problems(400, 401, 403, 409, 413, 415, 422);
/** The 503 of a route that needs what a deployment may lack (a log directory, a local routing daemon). */
export const unavailable = problems(503);

/** The body of a 202: the job that will do the work, to follow at `/v1/jobs/{job_id}`. */
export const jobAcceptedBody = (job: { id: string; type: string; status: string }) => ({ job_id: job.id, type: job.type, status: job.status });

/** The 202 answer of a route that enqueued a job, with its Location. */
export function jobAccepted(job: { id: string; type: string; status: string }): Outcome<ReturnType<typeof jobAcceptedBody>> {
  return { status: 202, body: jobAcceptedBody(job), headers: { location: `/v1/jobs/${job.id}` } };
}
