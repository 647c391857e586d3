import { eventSubjects, internalSubjects, parseEventSubject, tenantOfInternalSubject } from "@rlc/proto";
import type { FastifyInstance, onSendHookHandler } from "fastify";
import fp from "fastify-plugin";
import type { Bus } from "../bus/index.js";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Read-your-writes for GET /v1/lookup. A successful write of a tenant (any route: an entry, a
 * module, a community, a rollback…) has committed by the time its answer is sent, so just
 * before sending this process drops the tenant's lookup view and tells the other replicas on the
 * bus. A job's end (a refresh's new snapshots and revision) does the same through its finish
 * notice, which reaches every replica.
 */
export default fp(async function lookupInvalidationPlugin(app: FastifyInstance, opts: { bus: Bus; invalidate: (tenantId: string) => void }) {
  const afterWrite: onSendHookHandler = (req, reply, payload, done) => {
    const principal = req.principal;
    // Agents' writes (status reports, many a minute per router) and replayed answers change no
    // lookup input: they would only make every replica drop and re-check the tenant's view.
    if (WRITES.has(req.method) && reply.statusCode < 400 && principal && principal.role !== "node" && reply.getHeader("idempotent-replayed") !== "true") {
      opts.invalidate(principal.tenantId);
      opts.bus.publish(internalSubjects.lookupChanged(principal.tenantId), {});
    }
    done(null, payload);
  };
  // Only the routes that write carry the hook (every route is added after this plugin, see
  // app.ts): reads, nearly all the traffic, do not run it at all.
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => WRITES.has(m))) return;
    const existing = route.onSend ? (Array.isArray(route.onSend) ? route.onSend : [route.onSend]) : [];
    route.onSend = [...existing, afterWrite] as typeof route.onSend;
  });

  const subscriptions = [
    opts.bus.subscribe(internalSubjects.lookupChanged("*"), (_m, subject) => {
      const t = tenantOfInternalSubject(subject);
      if (t) opts.invalidate(t);
    }),
    opts.bus.subscribe(eventSubjects.jobFinished("*", "*"), (_m, subject) => {
      const t = parseEventSubject(subject)?.tenantId;
      if (t) opts.invalidate(t);
    }),
  ];
  app.addHook("onClose", async () => {
    for (const unsubscribe of subscriptions) unsubscribe();
  });
});
