import type { DatabaseStatus } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import { analyzeDatabase, countConnections, findDatabaseSize, listTableStatus } from "../../db/maintenance.js";
import { iso } from "../../lib/time.js";
import type { RequestContext } from "../access/context.js";
import { DB_ANALYZE_LIMIT, takeRateLimit } from "./rate-limit.js";

/** GET /v1/maintenance/db and its ANALYZE: the database the controller uses, as an operator sees it. */
export function databaseMaintenance(sql: Db) {
  return {
    /** Sizes, row estimates, dead tuples and connections of the database the controller uses. */
    async databaseStatus(ctx: Pick<RequestContext, "now">): Promise<DatabaseStatus> {
      const size = await findDatabaseSize(sql);
      const tables = await listTableStatus(sql);
      const connections = await countConnections(sql);
      return {
        collected_at: ctx.now.toISOString(),
        database: { name: size.name, size_bytes: size.size_bytes, server_version: size.server_version },
        tables: tables.map((t) => ({
          schema: t.schema,
          name: t.name,
          size_bytes: t.size_bytes,
          row_estimate: t.row_estimate,
          dead_tuples: t.dead_tuples,
          last_vacuum_at: iso(t.last_vacuum_at),
          last_analyze_at: iso(t.last_analyze_at),
        })),
        connections: { ...connections, max: size.max_connections },
      };
    },

    /**
     * Counted in PostgreSQL, not in this process: replicas share nothing else. The count is taken
     * in the same transaction, so two calls at once run one ANALYZE and refuse the other.
     */
    async analyze(tx: Db, ctx: RequestContext) {
      await takeRateLimit(tx, ctx.principal.tenantId, DB_ANALYZE_LIMIT, ctx.now);
      const started = performance.now();
      await analyzeDatabase(tx);
      return { analyzed_at: ctx.now.toISOString(), duration_ms: Math.round(performance.now() - started) };
    },
  };
}
