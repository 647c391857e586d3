import type { Clock } from "@rlc/shared/time";
import { backoffDelay } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import { deferAuditOutbox, deleteAuditOutbox, leaseAuditOutbox } from "../../db/audit.js";
import type { Sql } from "../../db/connect.js";
import type { OutboundClient } from "../../sources/outbound.js";
import { toAuditRecord } from "./audit.js";

export interface AuditPusherOptions {
  sql: Sql;
  http: OutboundClient;
  portalUrl: string;
  secret: string;
  clock: Clock;
  logger: FastifyBaseLogger;
  /** How often due rows are looked for when nothing wakes the pusher. Default 1000 ms. */
  intervalMs?: number;
  /** Rows per round. Default 50. */
  batch?: number;
  /** Pushes only while this answers true (the scheduler leader). Default: always. */
  shouldRun?: () => boolean;
}

/** After a failed push: 1 s, 2 s, 4 s … capped at 5 minutes, jittered (the agents' backoff). */
const RETRY = { baseMs: 1000, maxMs: 300_000 };

/**
 * Drains the audit outbox to `{portal}/api/v1/ingest/audit`. A portal that is down costs only
 * retries: the rows stay until a 2xx, requests never wait on the portal, and a record leased by
 * a replica that died is leased again when its lease (60 s) runs out.
 */
export function startAuditPusher(opts: AuditPusherOptions) {
  const url = new URL("api/v1/ingest/audit", opts.portalUrl.endsWith("/") ? opts.portalUrl : `${opts.portalUrl}/`).toString();
  const interval = opts.intervalMs ?? 1000;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  const pushOne = async (record: ReturnType<typeof toAuditRecord>) => {
    await opts.http.request(url, {
      method: "POST",
      trusted: true,
      timeoutMs: 5000,
      headers: { "content-type": "application/json", authorization: `Bearer ${opts.secret}` },
      body: JSON.stringify({ source_app: "bgp", record }),
    });
  };

  const round = async () => {
    const rows = await leaseAuditOutbox(opts.sql, new Date(opts.clock.now()), opts.batch ?? 50, 60);
    for (const row of rows) {
      if (stopped) return;
      try {
        await pushOne(toAuditRecord(row));
        await deleteAuditOutbox(opts.sql, row.id);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const next = new Date(opts.clock.now() + backoffDelay(row.attempts, RETRY));
        await deferAuditOutbox(opts.sql, row.id, next, message.slice(0, 500));
        opts.logger.warn({ audit_id: row.id, attempts: row.attempts + 1, err: message }, "audit push failed; will retry");
        // The portal is likely down: leave the rest of the batch for their own next attempt.
        return;
      }
    }
    if (rows.length === (opts.batch ?? 50)) again = true;
  };

  const run = () => {
    if (stopped || (opts.shouldRun && !opts.shouldRun())) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await round();
        } catch (err) {
          opts.logger.error({ err }, "audit push round failed");
        }
      } while (again && !stopped);
    })().finally(() => {
      running = null;
    });
  };

  timer = setInterval(run, interval);
  timer.unref();
  return {
    /** Called after a transaction that wrote audit records commits. */
    wake: run,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

export type AuditPusher = ReturnType<typeof startAuditPusher>;
