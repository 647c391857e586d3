import { createHash } from "node:crypto";
import { AppError } from "@rlc/shared/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { Db, Sql } from "../db/connect.js";
import { findIdempotencyRecord, tryClaimIdempotencyKey, upsertIdempotencyRecord } from "../db/idempotency.js";
import { stableStringify } from "../lib/stable-json.js";
import type { Clock } from "../lib/time.js";
import type { RequestContext } from "../services/context.js";
import type { Outcome } from "./types.js";

const KEY_RE = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;
const TTL_MS = 24 * 3600 * 1000;
/** Headers of an answer worth replaying (the rest describe the transport, not the result). */
const KEPT_HEADERS = ["location"];

function requestHash(req: FastifyRequest): string {
  const body = typeof req.body === "string" || Buffer.isBuffer(req.body) ? String(req.body) : stableStringify(req.body ?? null);
  return createHash("sha256").update(`${req.method}\n${req.url}\n${body}`).digest("hex");
}

/**
 * `req.mutate(reply, fn)`: one transaction holds the Idempotency-Key claim (an advisory lock),
 * the check for a stored answer, the effect and the stored answer (CONTRACT 0, Idempotency).
 * 4xx/5xx throw out of `fn`, which rolls everything back, claim included.
 */
export default fp(async function idempotencyPlugin(app: FastifyInstance, opts: { sql: Sql; clock: Clock }) {
  app.decorateRequest("mutate", async function mutate<T>(
    this: FastifyRequest,
    reply: FastifyReply,
    fn: (tx: Db, ctx: RequestContext) => Promise<Outcome<T>>,
  ): Promise<T> {
    const principal = this.principal;
    if (!principal) throw new Error("mutate() on a route without a principal");
    const header = this.headers["idempotency-key"];
    const key = Array.isArray(header) ? header[0] : header;
    if (key !== undefined && !KEY_RE.test(key)) {
      throw new AppError("validation_failed", "Idempotency-Key must be 1..255 printable ASCII characters", {
        errors: [{ path: "headers.idempotency-key", message: "1..255 printable ASCII characters" }],
      });
    }
    const after: (() => void | Promise<void>)[] = [];
    const ctx: RequestContext = { principal, requestId: this.id, now: opts.clock(), afterCommit: (f) => void after.push(f) };

    const outcome = await opts.sql.begin(async (tx) => {
      if (key === undefined) return { replayed: false, result: await fn(tx, ctx) };
      if (!(await tryClaimIdempotencyKey(tx, principal.tenantId, key))) {
        throw new AppError("idempotency_in_flight", "a request with this Idempotency-Key is still running; retry later", {
          headers: { "retry-after": "1" },
        });
      }
      const hash = requestHash(this);
      const stored = await findIdempotencyRecord(tx, principal.tenantId, key, new Date(ctx.now.getTime() - TTL_MS));
      if (stored) {
        if (stored.request_hash !== hash) {
          throw new AppError("idempotency_key_reused", "this Idempotency-Key was used with a different method, path or body");
        }
        const body = stored.response_body === null ? undefined : (JSON.parse(stored.response_body) as T);
        return { replayed: true, result: { status: stored.status_code, body: body as T, headers: stored.response_headers } };
      }
      const result = await fn(tx, ctx);
      const headers: Record<string, string> = {};
      for (const h of KEPT_HEADERS) if (result.headers?.[h]) headers[h] = result.headers[h];
      await upsertIdempotencyRecord(tx, principal.tenantId, key, {
        request_hash: hash,
        status_code: result.status,
        response_body: result.body === undefined ? null : JSON.stringify(result.body),
        response_headers: headers,
        created_at: ctx.now,
      });
      return { replayed: false, result };
    });

    if (!outcome.replayed) {
      for (const f of after) {
        try {
          await f();
        } catch (err) {
          this.log.warn({ err }, "after-commit step failed");
        }
      }
    }
    reply.code(outcome.result.status);
    if (outcome.result.headers) reply.headers(outcome.result.headers);
    if (outcome.replayed) reply.header("idempotent-replayed", "true");
    return outcome.result.body;
  });
});
