import { describe, expect, it } from "vitest";
import { ControllerHttpClient, retryAfterMs } from "./http-client.js";

/** A fetch that answers from a list, one answer per call, and counts the calls. */
function scripted(answers: (() => Response)[]) {
  const calls: string[] = [];
  const fetch = (async (url: string | URL) => {
    calls.push(String(url));
    const next = answers.shift();
    if (!next) throw new Error("no more answers");
    return next();
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

const problem = (status: number, code: string, retryAfter?: string) => () =>
  new Response(JSON.stringify({ code, detail: "later" }), {
    status,
    headers: { "content-type": "application/problem+json", ...(retryAfter ? { "retry-after": retryAfter } : {}) },
  });
const latest = () => new Response(JSON.stringify({ revision_id: 3, digest: "d", sequence: 1, issued_at: null }), { status: 200 });

describe("ControllerHttpClient and the controller's limits", () => {
  it("a 429 with Retry-After is waited out and asked again, not taken as a refusal", async () => {
    const { fetch, calls } = scripted([problem(429, "rate_limited", "2"), latest]);
    const waits: number[] = [];
    const client = new ControllerHttpClient({ baseUrl: "https://c", nodeKey: "k", fetch, random: () => 0.5, sleep: async (ms) => void waits.push(ms) });
    expect(await client.latest("s")).toMatchObject({ revision_id: 3 });
    expect(calls).toHaveLength(2);
    expect(waits).toEqual([2250]);
  });

  it("a controller still busy after the retries fails the call as controller_busy (a 503 too)", async () => {
    const { fetch, calls } = scripted(Array.from({ length: 4 }, () => problem(503, "not_ready", "5")));
    const client = new ControllerHttpClient({ baseUrl: "https://c", nodeKey: "k", fetch, random: () => 0, sleep: async () => undefined });
    await expect(client.latest("s")).rejects.toMatchObject({ code: "controller_busy", status: 503 });
    expect(calls).toHaveLength(4);
  });

  it("the probation's health check asks once: a busy answer is an answer now", async () => {
    const { fetch, calls } = scripted([problem(503, "not_ready", "1")]);
    const client = new ControllerHttpClient({ baseUrl: "https://c", nodeKey: "k", fetch, sleep: async () => undefined });
    await expect(client.health(1000)).rejects.toMatchObject({ code: "controller_busy" });
    expect(calls).toHaveLength(1);
  });

  it("a replica that refuses the connection sends the request to the next one, which later requests keep using until it fails in turn", async () => {
    const refused = () => {
      throw new TypeError("fetch failed: connect ECONNREFUSED");
    };
    const { fetch, calls } = scripted([refused, latest, latest, refused, latest]);
    const moves: string[] = [];
    const client = new ControllerHttpClient({
      baseUrl: ["https://a/", "https://b"],
      nodeKey: "k",
      fetch,
      onMove: (from, to) => void moves.push(`${from} -> ${to}`),
    });
    expect(await client.latest("s")).toMatchObject({ revision_id: 3 });
    expect(client.endpoint).toBe("https://b");
    expect(await client.latest("s")).toMatchObject({ revision_id: 3 });
    // b gone too: round-robin, back to a.
    expect(await client.latest("s")).toMatchObject({ revision_id: 3 });
    expect(calls.map((u) => new URL(u).host)).toEqual(["a", "b", "b", "b", "a"]);
    expect(moves).toEqual(["https://a -> https://b", "https://b -> https://a"]);
  });

  it("with every replica unreachable the request fails once each was tried; a refusal of the request itself moves nothing", async () => {
    const refused = () => {
      throw new TypeError("fetch failed");
    };
    const { fetch, calls } = scripted([refused, refused, problem(401, "unauthenticated")]);
    const client = new ControllerHttpClient({ baseUrl: ["https://a", "https://b"], nodeKey: "k", fetch });
    await expect(client.latest("s")).rejects.toMatchObject({ code: "controller_unreachable" });
    expect(calls.map((u) => new URL(u).host)).toEqual(["a", "b"]);
    await expect(client.latest("s")).rejects.toMatchObject({ code: "unauthenticated" });
    expect(client.endpoint).toBe("https://a");
  });

  it("Retry-After in seconds or as a date, capped, with a quarter of jitter at most; 1 s when it says nothing", () => {
    const o = { maxMs: 30_000, random: () => 0, now: Date.parse("2026-01-01T00:00:00Z") };
    expect(retryAfterMs("2", o)).toBe(2000);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:10 GMT", o)).toBe(10_000);
    expect(retryAfterMs("86400", o)).toBe(30_000);
    expect(retryAfterMs(null, o)).toBe(1000);
    expect(retryAfterMs("soon", o)).toBe(1000);
    expect(retryAfterMs("4", { ...o, random: () => 0.999 })).toBeLessThanOrEqual(5000);
  });
});
