import { describe, expect, it } from "vitest";
import { EndpointRing } from "./endpoint-ring.js";

describe("EndpointRing", () => {
  it("starts on the first endpoint, moves to the next when the one in use fails, and comes back round-robin", () => {
    const moves: string[] = [];
    const ring = new EndpointRing(["a:1", "b:1", "c:1"], (from, to) => moves.push(`${from}>${to}`));
    expect(ring.current).toBe("a:1");
    expect(ring.failed("a:1")).toBe("b:1");
    expect(ring.failed("b:1")).toBe("c:1");
    expect(ring.failed("c:1")).toBe("a:1");
    expect(moves).toEqual(["a:1>b:1", "b:1>c:1", "c:1>a:1"]);
  });

  it("a failure on an endpoint no longer in use moves nothing: two calls lost on one replica move the agent once", () => {
    const ring = new EndpointRing(["a:1", "b:1"]);
    ring.failed("a:1");
    expect(ring.failed("a:1")).toBe("b:1");
    expect(ring.current).toBe("b:1");
  });

  it("a single endpoint stays, whatever fails", () => {
    const moves: string[] = [];
    const ring = new EndpointRing(["a:1"], (from, to) => moves.push(`${from}>${to}`));
    expect(ring.failed("a:1")).toBe("a:1");
    expect(moves).toEqual([]);
    expect(() => new EndpointRing([])).toThrow(/no endpoint/);
  });
});
