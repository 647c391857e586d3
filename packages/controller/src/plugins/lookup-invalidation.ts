import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import type { Bus } from "../bus/index.js";
import { lookupChangedSubject } from "../services/lookup.js";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Read-your-writes for GET /v1/lookup. A successful write of a tenant (any route: an entry, a
 * module, a community, a rollback…) has committed by the time its answer is sent, so just
 * before sending this process drops the tenant's lookup view and tells the other replicas on the
 * bus. A job's end (a refresh's new snapshots and revision) does the same through its finish
 * notice, which reaches every replica.
 */
export default fp(async function lookupInvalidationPlugin(app: FastifyInstance, opts: { bus: Bus; invalidate: (tenantId: string) => void }) {
  app.addHook("onSend", async (req, reply) => {
    if (!WRITES.has(req.method) || reply.statusCode >= 400) return;
    const principal = req.principal;
    // Agents' writes (status reports, many a minute per router) and replayed answers change no
    // lookup input: they would only make every replica drop and re-check the tenant's view.
    if (!principal || principal.role === "node" || reply.getHeader("idempotent-replayed") === "true") return;
    const tenantId = principal.tenantId;
    opts.invalidate(tenantId);
    opts.bus.publish(lookupChangedSubject(tenantId), {});
  });

  // rl.<tenant>.lookup.changed and rl.<tenant>.jobs.<job>.finished
  const tenantOf = (subject: string) => subject.split(".")[1];
  const subscriptions = [
    opts.bus.subscribe("rl.*.lookup.changed", (_m, subject) => {
      const t = tenantOf(subject);
      if (t) opts.invalidate(t);
    }),
    opts.bus.subscribe("rl.*.jobs.*.finished", (_m, subject) => {
      const t = tenantOf(subject);
      if (t) opts.invalidate(t);
    }),
  ];
  app.addHook("onClose", async () => {
    for (const unsubscribe of subscriptions) unsubscribe();
  });
});
