import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { SigningKeyJson, StatusErrorJson } from "@rlc/proto";
import { type BundleContent, receiveBundle, type SigningKeyPair } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterEach, beforeEach } from "vitest";
import { ControllerError, type DesiredRevision } from "../../packages/agent/src/bundle/http-client.js";
import { AgentMetrics } from "../../packages/agent/src/http/metrics.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { StateStore } from "../../packages/agent/src/state.js";
import { SyncLoop, type SyncLoopOptions } from "../../packages/agent/src/sync-loop.js";
import { fakeBird, fixtureContent, issueBundle, okRunner, SPEAKER_ID, storedKey, TENANT_ID, testKey } from "./agent-fakes.js";

// The sync loop with a fake controller, a fake BIRD and real files, for the sync-loop tests.

export interface Harness {
  loop: SyncLoop;
  bird: ReturnType<typeof fakeBird>;
  state: StateStore;
  configPath: string;
  bundles: Map<number, Uint8Array>;
  desired: { current: DesiredRevision | null };
  calls: { latest: number; fetch: number[] };
  reports: { reason: string; error: StatusErrorJson | null }[];
  listedKeys: SigningKeyJson[];
  metrics: AgentMetrics;
  /** Holds every fetch until released. */
  gate: { wait: Promise<void> | null };
}

/** The test's directory, signing key and bundle content, fresh for each test (useSyncEnv). */
export const env = { dir: "", key: undefined as unknown as SigningKeyPair, content: undefined as unknown as BundleContent };

/** Registers the hooks that give every test of the calling file a fresh {@link env}. */
export function useSyncEnv(): void {
  beforeEach(async () => {
    env.dir = mkdtempSync(join(tmpdir(), "rl-sync-"));
    env.key = await testKey();
    env.content = fixtureContent();
    // No window unless a test asks for one: the probation's own tests do.
    env.content.bird.confirm_after_seconds = 0;
  });
  afterEach(() => rmSync(env.dir, { recursive: true, force: true }));
}

export async function harness(overrides: Partial<SyncLoopOptions> = {}): Promise<Harness> {
  const state = new StateStore(join(env.dir, "state"));
  await state.init();
  await state.writeSigningKeys([storedKey(env.key)]);
  mkdirSync(join(env.dir, "etc"), { recursive: true });
  const configPath = join(env.dir, "etc", "rl-routes.conf");
  writeFileSync(configPath, "# operator's empty include\n");
  const bird = fakeBird(configPath);
  const h = {
    bird,
    state,
    configPath,
    bundles: new Map<number, Uint8Array>(),
    desired: { current: null as DesiredRevision | null },
    calls: { latest: 0, fetch: [] as number[] },
    reports: [] as Harness["reports"],
    listedKeys: [] as SigningKeyJson[],
    metrics: new AgentMetrics({ version: "test", speakerId: SPEAKER_ID }),
    gate: { wait: null as Promise<void> | null },
  };
  let error: StatusErrorJson | null = null;
  const loop = new SyncLoop({
    client: {
      latest: async () => {
        h.calls.latest++;
        return h.desired.current;
      },
      fetchBundle: async (revisionId, { onHead } = {}) => {
        h.calls.fetch.push(revisionId);
        await h.gate.wait;
        const bytes = h.bundles.get(revisionId);
        if (!bytes) throw new ControllerError("not_found", `no bundle ${revisionId}`);
        // As the transports take a bundle in: the head checked as soon as it is read.
        return receiveBundle(bytes, { maxBytes: Number.MAX_SAFE_INTEGER, onHead });
      },
      signingKeys: async () => h.listedKeys,
    },
    state,
    reporter: {
      setError: (e) => {
        error = e;
      },
      report: async (reason) => {
        h.reports.push({ reason, error });
        return true;
      },
    },
    bird,
    runner: okRunner,
    metrics: h.metrics,
    clock: createSystemClock(),
    log: silentLogger,
    speakerId: SPEAKER_ID,
    tenantId: TENANT_ID,
    birdMode: "include",
    birdConfigPath: configPath,
    stagingDir: join(env.dir, "staging"),
    healthWaitMs: 0,
    retry: { baseMs: 20, maxMs: 50 },
    ...overrides,
  });
  return Object.assign(h, { loop });
}

/** The files the agent owns beside BIRD's config (the include and its static files), by name. */
export function configFiles(h: Harness): Record<string, string> {
  const etc = dirname(h.configPath);
  return Object.fromEntries(
    readdirSync(etc)
      .filter((f) => f.startsWith("rl-routes") && !f.endsWith(".rl-prev"))
      .map((f) => [f, readFileSync(join(etc, f), "utf8")]),
  );
}

/** Makes `revision` (signed as given) the one the controller names. */
export async function publish(h: Harness, revision: number, sequence: number, extra: Partial<Parameters<typeof issueBundle>[1]> = {}) {
  const issued = await issueBundle({ ...env.content, revision_id: revision }, { sequence, key: env.key, ...extra });
  h.bundles.set(revision, issued.bytes);
  h.desired.current = issued.desired;
  return issued;
}
