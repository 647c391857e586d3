import { createSystemClock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import type { SchedulerLock } from "../services/operations/scheduler-lock.js";
import { type Scheduler, startScheduler } from "./scheduler.js";

// The scheduler's leadership over a lock that behaves as PostgreSQL's session advisory lock does
// (one backend holds it; a killed backend loses it, and its connection cannot be used again),
// with checks that can be made slow or failing: what a loaded or partitioned database does,
// which the PostgreSQL tests (test/scheduler) cannot make happen on purpose.

const ELECTION_MS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const silent = { info() {}, warn() {}, error() {} } as unknown as FastifyBaseLogger;

interface FakeDatabase {
  holder: number | null;
  dead: Set<number>;
  next: number;
}

interface FakeLock extends SchedulerLock {
  /** The backend this process's connection is on, if it has one. */
  backend(): number | null;
  checkDelayMs: number;
  checkFails: boolean;
  /** While true, a take reaches the database (and gets the lock if it is free) but its answer never comes. */
  takeHangs: boolean;
  /** The backends whose take hung, in order. */
  hung: number[];
  /** Every letGo, with the backend it let go. */
  letGos: { lost: boolean; backend: number | null }[];
}

function fakeLock(db: FakeDatabase): FakeLock {
  let backend: number | null = null;
  let holder: number | null = null;
  const lock: FakeLock = {
    alone: false,
    checkDelayMs: 0,
    checkFails: false,
    takeHangs: false,
    hung: [],
    letGos: [],
    backend: () => backend,
    async take() {
      backend ??= db.next++;
      if (lock.takeHangs) {
        // Granted on the server, the answer lost on the way: the connection now holds the lock
        // without this process knowing.
        if (db.holder === null) db.holder = backend;
        lock.hung.push(backend);
        return new Promise<boolean>(() => {});
      }
      if (db.dead.has(backend)) {
        backend = null;
        throw new Error("connection lost");
      }
      if (db.holder !== null && db.holder !== backend) return false;
      db.holder = holder = backend;
      return true;
    },
    async held() {
      if (backend === null || holder === null) return false;
      // The database answers as things stand when asked; the answer takes checkDelayMs to come
      // back (a check begun just before a kill says the lock is still held).
      const answer = db.holder === holder;
      await sleep(lock.checkDelayMs);
      if (lock.checkFails) throw new Error("the database does not answer");
      return answer;
    },
    letGo(lost: boolean) {
      lock.letGos.push({ lost, backend });
      // Unlocked, or its connection closed: either way the session, and a lock on it, ends (a
      // killed backend's lock is already gone).
      if (backend !== null && db.holder === backend) db.holder = null;
      backend = holder = null;
    },
    async close() {
      if (backend !== null && db.holder === backend) db.holder = null;
      backend = holder = null;
    },
  };
  return lock;
}

const started: Scheduler[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

function replica(lock: FakeLock, runs: { n: number } = { n: 0 }) {
  const s = startScheduler({
    lock,
    clock: createSystemClock(),
    logger: silent,
    electionMs: ELECTION_MS,
    tasks: [{ name: "count", everyMs: 5, run: async () => void runs.n++ }],
  });
  started.push(s);
  return s;
}

/** Samples every 2 ms for `ms`: how many samples saw more than one leader. */
async function bothLeading(schedulers: Scheduler[], ms: number): Promise<number> {
  let both = 0;
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (schedulers.filter((s) => s.isLeader()).length > 1) both++;
    await sleep(2);
  }
  return both;
}

/**
 * Samples every 2 ms until `done` holds (at most 10 s: a loaded machine delays the timers, so
 * no test waits a fixed number of elections for what must come): how many samples saw more than
 * one leader meanwhile.
 */
async function until(done: () => boolean, schedulers: Scheduler[]): Promise<number> {
  let both = 0;
  for (const end = Date.now() + 10_000; !done() && Date.now() < end; ) {
    if (schedulers.filter((s) => s.isLeader()).length > 1) both++;
    await sleep(2);
  }
  return both;
}

describe("scheduler leadership", () => {
  it("a leader whose check of the lock is slow after its connection is killed stops before the new holder leads: never two leaders", async () => {
    const db: FakeDatabase = { holder: null, dead: new Set(), next: 1 };
    const lockA = fakeLock(db);
    const a = replica(lockA);
    await until(() => a.isLeader(), [a]);
    expect(a.isLeader()).toBe(true);
    const b = replica(fakeLock(db));
    await sleep(ELECTION_MS * 2);
    expect(b.isLeader()).toBe(false);

    // A's backend is killed and its checks now take ten intervals (a loaded database): B takes
    // the lock at its next election, and A must have stopped before B leads.
    lockA.checkDelayMs = ELECTION_MS * 10;
    db.dead.add(lockA.backend()!);
    db.holder = null;
    expect(await until(() => b.isLeader(), [a, b])).toBe(0);
    expect(await bothLeading([a, b], ELECTION_MS * 15)).toBe(0);
    expect(b.isLeader()).toBe(true);
    expect(a.isLeader()).toBe(false);
  });

  it("a leader whose checks fail stops running the tasks but keeps the lock, and leads again when a check says it holds it", async () => {
    const db: FakeDatabase = { holder: null, dead: new Set(), next: 1 };
    const lockA = fakeLock(db);
    const runs = { n: 0 };
    const a = replica(lockA, runs);
    await until(() => a.isLeader(), [a]);
    const b = replica(fakeLock(db));
    expect(a.isLeader()).toBe(true);

    lockA.checkFails = true;
    await until(() => !a.isLeader(), [a, b]);
    expect(a.isLeader()).toBe(false);
    // Paused, not gone: its backend still holds the lock, so no one else leads, and no task runs.
    const held = lockA.backend();
    expect(db.holder).toBe(held);
    const paused = runs.n;
    await sleep(ELECTION_MS * 3);
    expect(runs.n).toBe(paused);
    expect(b.isLeader()).toBe(false);

    lockA.checkFails = false;
    await until(() => a.isLeader(), [a, b]);
    expect(a.isLeader()).toBe(true);
    expect(lockA.backend()).toBe(held);
    await until(() => runs.n > paused, [a, b]);
    expect(runs.n).toBeGreaterThan(paused);
    expect(b.isLeader()).toBe(false);
  });

  it("a paused leader that learns its lock is gone lets its connection go, and the replica that took the lock leads", async () => {
    const db: FakeDatabase = { holder: null, dead: new Set(), next: 1 };
    const lockA = fakeLock(db);
    const a = replica(lockA);
    await until(() => a.isLeader(), [a]);
    const b = replica(fakeLock(db));
    lockA.checkFails = true;
    await until(() => !a.isLeader(), [a, b]);
    expect(a.isLeader()).toBe(false);

    db.dead.add(lockA.backend()!);
    db.holder = null;
    lockA.checkFails = false;
    expect(await until(() => b.isLeader(), [a, b])).toBe(0);
    expect(await bothLeading([a, b], ELECTION_MS * 6)).toBe(0);
    expect(b.isLeader()).toBe(true);
    expect(a.isLeader()).toBe(false);
    // A gave its lost connection back, and any later try is on a new backend that B's lock keeps out.
    expect(lockA.backend()).not.toBe(db.dead.values().next().value);
  });

  it("an election whose take of the lock never answers ends: its connection is let go as lost, and the replica leads once a take answers", async () => {
    const db: FakeDatabase = { holder: null, dead: new Set(), next: 1 };
    const lockA = fakeLock(db);
    lockA.takeHangs = true;
    const a = replica(lockA);
    await until(() => lockA.hung.length > 0, [a]);
    const [hung] = lockA.hung;
    // The lock was granted on the hung connection: only letting that connection go frees it.
    expect(db.holder).toBe(hung);
    await until(() => lockA.letGos.some((g) => g.backend === hung), [a]);
    expect(lockA.letGos).toContainEqual({ lost: true, backend: hung });
    expect(db.holder).not.toBe(hung);

    lockA.takeHangs = false;
    await until(() => a.isLeader(), [a]);
    expect(a.isLeader()).toBe(true);
    expect(lockA.backend()).not.toBe(hung);
    expect(db.holder).toBe(lockA.backend());
  });
});
