import { NotFoundError } from "@rlc/shared/errors";
import type { RpkiDryRun } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import { listIngestModules } from "../../db/ingest-inputs.js";
import { listSnapshotGroups } from "../../db/snapshots.js";
import type { RpkiValidator } from "../../sources/rpki-source.js";
import { checkGroups } from "./rpki-check.js";

const LISTED = 1000;

/**
 * `POST /v1/modules/{id}/refresh` with `{"dry_run": true}`: validates the module's current
 * snapshot (or, for `/v1/modules/refresh`, every enabled module's) and answers what
 * `drop_invalid` would drop, whatever the module's policy is now. Collects nothing, writes nothing.
 */
export function createRpkiDryRunService(deps: { sql: Db; rpki: RpkiValidator | null }) {
  return {
    async run(tenantId: string, moduleId: string | null): Promise<RpkiDryRun> {
      const modules = (await listIngestModules(deps.sql, tenantId)).filter((m) => (moduleId ? m.id === moduleId : m.enabled));
      if (moduleId && !modules.length) throw new NotFoundError("module", moduleId);
      const index = deps.rpki ? await deps.rpki.index() : null;
      const status = deps.rpki
        ? deps.rpki.status()
        : { available: false, reason: "no VRP source is configured (RPKI_VRP_SOURCE)", generated_at: null, loaded_at: null, vrp_count: 0 };
      const out: RpkiDryRun = { dry_run: true, rpki: status, modules: [] };
      for (const m of modules) {
        const groups = await listSnapshotGroups(deps.sql, m.id, "asn");
        const checked = checkGroups(m.id, "drop_invalid", groups, index, LISTED);
        out.modules.push({
          module_id: m.id,
          rpki_policy: m.rpki_policy,
          valid: checked.counts.valid,
          invalid: checked.counts.invalid,
          not_found: checked.counts.not_found,
          would_drop: checked.counts.dropped,
          invalid_prefixes: checked.invalid,
        });
      }
      return out;
    },
  };
}

export type RpkiDryRunService = ReturnType<typeof createRpkiDryRunService>;
