import { createHash } from "node:crypto";
import type { Db } from "../../db/connect.js";
import { findSnapshotGeneration } from "../../db/snapshot-generation.js";
import { listSnapshotPrefixes } from "../../db/snapshots.js";
import type { BogonSettings, BuiltRevision, ModuleInput } from "./revision-build.js";
import { compactContent } from "./revision-content.js";
import { type BuildState, buildWithState, rebuildRevision } from "./revision-incremental.js";

/** What a tenant's last build leaves for its next refresh. */
interface Kept {
  state: BuildState;
  /** The tenant's snapshot generation the build's modules were read at (or written in). */
  generation: string;
  /** Content hash of each module's collected prefixes, by module id. */
  hashes: Map<string, string>;
}

/**
 * The content hash a module's build input is kept under: SHA-256 of its texts, each followed by
 * a newline. Joined natively a slice at a time (a concatenation a text, 60k of them in a CDN
 * module, ran cold in the refresh: 6-11 ms against 5).
 */
export function prefixesHash(prefixes: readonly string[]): string {
  const h = createHash("sha256");
  for (let i = 0; i < prefixes.length; i += HASH_SLICE) h.update(`${prefixes.slice(i, i + HASH_SLICE).join("\n")}\n`);
  return h.digest("base64");
}

const HASH_SLICE = 16_384;

/**
 * Builds revisions, keeping each tenant's last build so that a refresh of a few modules
 * rebuilds only what they changed (revision-incremental.ts); `full` (REFRESH_MODE=full) always
 * builds from every module's prefixes, for comparison. Per process, a handful of tenants.
 */
export function createRevisionBuilder(opts: { full?: boolean; tenants?: number } = {}) {
  const kept = new Map<string, Kept>();
  const max = opts.tenants ?? 4;
  return {
    /**
     * The revision of the enabled `modules`: the `collected` ones' prefixes as given, every other
     * module's from its stored snapshot, or, when the tenant's last build was made at the
     * snapshot generation the database has now, from that build (only the blocks the collected
     * modules changed are rebuilt). `keep` is called once the revision's transaction has
     * committed, with the generation the snapshots have then (generationOf in it).
     * `beforeCompute` is awaited once `db` has been read and before the build's own work (which
     * holds this thread): a caller's statements sent then run on the server beside it.
     */
    async build(
      db: Db,
      tenantId: string,
      modules: Omit<ModuleInput, "prefixes">[],
      collected: ReadonlyMap<string, readonly string[]>,
      settings: BogonSettings,
      beforeCompute?: () => Promise<void>,
    ) {
      const generation = await findSnapshotGeneration(db, tenantId);
      const hashes = new Map([...collected].filter(([id]) => modules.some((m) => m.module_id === id)).map(([id, list]) => [id, prefixesHash(list)]));
      const k = opts.full ? undefined : kept.get(tenantId);
      let result: { built: BuiltRevision; state: BuildState | null } | null = null;
      let all = hashes;
      if (k && k.generation === generation && modules.every((m) => collected.has(m.module_id) || k.hashes.has(m.module_id))) {
        const changed = new Set([...hashes].filter(([id, hash]) => k.hashes.get(id) !== hash).map(([id]) => id));
        const input = modules.map((m) => ({ ...m, prefixes: collected.get(m.module_id) ?? [] }));
        await beforeCompute?.();
        result = rebuildRevision(k.state, input, settings, changed);
        all = new Map([...k.hashes, ...hashes]);
      }
      const incremental = result !== null;
      if (!result) {
        const stored = await listSnapshotPrefixes(
          db,
          modules.filter((m) => !collected.has(m.module_id)).map((m) => m.module_id),
        );
        await beforeCompute?.();
        for (const [id, list] of stored) hashes.set(id, prefixesHash(list));
        result = buildWithState(
          modules.map((m) => ({ ...m, prefixes: collected.get(m.module_id) ?? stored.get(m.module_id) ?? [] })),
          settings,
        );
        all = hashes;
      }
      const state = result.state;
      // Whatever is kept now is the build before this one: a refresh that fails leaves none.
      kept.delete(tenantId);
      return {
        built: result.built,
        incremental,
        /**
         * `generationNow` read in the committing transaction after its own bump (`bumped`): any
         * other refresh in between makes this build stale, and none is kept.
         */
        keep(generationNow: string, bumped: boolean) {
          if (!state || opts.full || BigInt(generationNow) !== BigInt(generation) + (bumped ? 1n : 0n)) return;
          compactContent(state.content);
          kept.set(tenantId, { state, generation: generationNow, hashes: all });
          while (kept.size > max) kept.delete(kept.keys().next().value!);
        },
      };
    },

    /** The tenant's snapshot generation as `db` (the revision's transaction) sees it. */
    generationOf: findSnapshotGeneration,
  };
}

export type RevisionBuilder = ReturnType<typeof createRevisionBuilder>;
