import { AppError, ValidationError } from "@rlc/shared/errors";
import { describe, expect, it } from "vitest";
import { INTERNAL_JOB_DETAIL, POISONED_PROBLEM, problemOf } from "./jobs-problem.js";

describe("a failed job's error", () => {
  it("keeps an AppError's code, message and field errors: what the user is meant to read", () => {
    const err = new ValidationError("asn 0 is reserved", [{ path: "asn", message: "reserved" }]);
    const problem = problemOf(err);
    expect(problem).toMatchObject({ code: "validation_failed", status: 400, detail: "asn 0 is reserved" });
    expect(problem.errors).toEqual([{ path: "asn", message: "reserved" }]);
  });

  it("never stores the message of an internal error (SQL, file paths), only a pointer to the log", () => {
    const problem = problemOf(new Error('relation "snapshots" does not exist at /srv/rlc/db.ts:12'));
    expect(problem).toMatchObject({ code: "internal", detail: INTERNAL_JOB_DETAIL });
    expect(JSON.stringify(problem)).not.toContain("snapshots");
    expect(problemOf("a thrown string")).toMatchObject({ code: "internal", detail: INTERNAL_JOB_DETAIL });
  });

  it("says a poisoned job was stopped for losing its worker, not for its own work", () => {
    expect(POISONED_PROBLEM).toMatchObject({ code: "internal", reason: "poisoned" });
    expect(String(POISONED_PROBLEM.detail)).toContain("lease lost");
  });

  it("carries an AppError's extra members, such as a retry hint", () => {
    expect(problemOf(new AppError("rate_limited", "slow down", { extra: { retry_after: 5 } }))).toMatchObject({ retry_after: 5, status: 429 });
  });
});
