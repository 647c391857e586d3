import { eventSubjects, parseEventSubject } from "@rlc/proto";
import type { Clock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import type { Bus } from "../bus/index.js";
import type { DeployService } from "../services/deploy/deploy.js";

/**
 * Listens on the bus for the speakers' status reports (every replica's, relayed by the one that
 * recorded it) and has that tenant's awaiting applies evaluated (DeployService.evaluateAwaiting).
 * Evaluations of one tenant run one after another in this process, and a burst of reports while
 * one runs costs one more run, not one per report; other replicas doing the same is safe (the
 * jobs are row-locked and each end is conditional).
 * The first report is evaluated at once; runs that follow are at least `gapMs` apart, so the
 * reports of a thousand agents arriving over seconds cost a run per gap, each rewriting the
 * job's progress once, rather than a run per handful of reports.
 */
export function startAwaitingEvaluator(deps: {
  bus: Bus;
  clock: Clock;
  logger: FastifyBaseLogger;
  deploy: Pick<DeployService, "evaluateAwaiting">;
  gapMs?: number;
}) {
  const gapMs = deps.gapMs ?? 250;
  const state = new Map<string, { running: Promise<void>; again: boolean }>();
  const now = () => new Date(deps.clock.now());
  let stopped = false;

  const evaluate = (tenantId: string) => {
    const s = state.get(tenantId);
    if (s) {
      s.again = true;
      return;
    }
    const entry = { running: Promise.resolve(), again: false };
    state.set(tenantId, entry);
    entry.running = (async () => {
      do {
        entry.again = false;
        try {
          await deps.deploy.evaluateAwaiting(now, { tenantId });
        } catch (err) {
          deps.logger.warn({ err, tenant_id: tenantId }, "evaluating awaiting jobs failed; the sweep will");
        }
        if (entry.again && !stopped) await new Promise((resolve) => setTimeout(resolve, gapMs));
      } while (entry.again && !stopped);
      state.delete(tenantId);
    })();
  };

  const unsubscribe = deps.bus.subscribe(eventSubjects.status("*", "*"), (_message, subject) => {
    if (stopped) return;
    const tenantId = parseEventSubject(subject)?.tenantId;
    if (tenantId) evaluate(tenantId);
  });

  return {
    async stop() {
      stopped = true;
      unsubscribe();
      await Promise.allSettled([...state.values()].map((s) => s.running));
    },
  };
}
