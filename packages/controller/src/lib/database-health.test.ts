import { describe, expect, it } from "vitest";
import { createDatabaseHealth, isConnectionError } from "./database-health.js";

const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });

describe("database health", () => {
  it("a connection error marks the database down at once; a query error does not", () => {
    const health = createDatabaseHealth({ probe: async () => {}, upProbeMs: 60_000 });
    try {
      health.noteError(Object.assign(new Error("duplicate key"), { code: "23505" }));
      expect(health.isDown()).toBe(false);
      health.noteError(refused);
      expect(health.isDown()).toBe(true);
      expect(health.downSince()).toBeInstanceOf(Date);
    } finally {
      health.close();
    }
  });

  it("one slow answer is not an outage, two in a row are; an answer brings it back up", async () => {
    let answer: () => Promise<void> = () => new Promise(() => {}); // never answers
    const health = createDatabaseHealth({ probe: () => answer(), upProbeMs: 60_000 });
    try {
      expect(await health.check(20)).toBe(false);
      expect(health.isDown()).toBe(false);
      expect(await health.check(20)).toBe(false);
      expect(health.isDown()).toBe(true);
      answer = async () => {};
      expect(await health.check(20)).toBe(true);
      expect(health.isDown()).toBe(false);
    } finally {
      health.close();
    }
  });

  it("the embedded database is never down: a busy connection is not an outage", async () => {
    const health = createDatabaseHealth({ probe: () => new Promise(() => {}), monitor: false });
    health.noteError(refused);
    expect(health.isDown()).toBe(false);
    expect(await health.check(10)).toBe(false);
    expect(health.isDown()).toBe(false);
  });

  it("tells connection errors (node's, postgres.js's, the server's going-away SQLSTATEs) from others", () => {
    for (const code of ["ECONNRESET", "CONNECTION_CLOSED", "CONNECT_TIMEOUT", "57P01", "08006"]) expect(isConnectionError({ code }), code).toBe(true);
    for (const code of ["23505", "TIMEOUT", "42P01"]) expect(isConnectionError({ code }), code).toBe(false);
    expect(isConnectionError(new Error("no code"))).toBe(false);
  });
});
