import { createHash } from "node:crypto";
import { AppError, ForbiddenError } from "@rlc/shared/errors";
import type { Clock } from "@rlc/shared/time";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { Db, Sql } from "../db/connect.js";
import { findIdempotencyRecord, tryClaimIdempotencyKey, upsertIdempotencyRecord } from "../db/idempotency.js";
import type { SecretBox } from "../lib/secret-box.js";
import { stableStringify } from "../lib/stable-json.js";
import { type RequestContext, type RoleName, roleRank } from "../services/access/context.js";
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
 * the check for a stored answer, the effect and the stored answer. 4xx/5xx throw out of `fn`,
 * which rolls everything back, claim included.
 *
 * A stored answer belongs to the API key that made it, as in Stripe's API: the route's role
 * check has passed before `mutate` runs, and another key (a lower role of the same tenant
 * among them) sending the same Idempotency-Key runs its own request, with its own checks,
 * instead of receiving someone else's answer. The same key replays only while its role is not
 * lower than when the answer was made. Answers carry secrets (new API keys, enrollment tokens),
 * so their bodies are kept sealed with the data key.
 */
export default fp(async function idempotencyPlugin(app: FastifyInstance, opts: { sql: Sql; clock: Clock; secretBox: SecretBox }) {
  app.decorateRequest("mutate", async function mutate<
    T,
  >(this: FastifyRequest, reply: FastifyReply, fn: (tx: Db, ctx: RequestContext) => Promise<Outcome<T>>): Promise<T> {
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
    const ctx: RequestContext = { principal, requestId: this.id, now: new Date(opts.clock.now()), afterCommit: (f) => void after.push(f) };

    const outcome = await opts.sql.begin(async (tx) => {
      if (key === undefined) return { replayed: false, result: await fn(tx, ctx) };
      const scope = { tenantId: principal.tenantId, apiKeyId: principal.keyId };
      if (!(await tryClaimIdempotencyKey(tx, scope, key))) {
        throw new AppError("idempotency_in_flight", "a request with this Idempotency-Key is still running; retry later", {
          headers: { "retry-after": "1" },
        });
      }
      const hash = requestHash(this);
      const stored = await findIdempotencyRecord(tx, scope, key, new Date(ctx.now.getTime() - TTL_MS));
      if (stored) {
        if (stored.request_hash !== hash) {
          throw new AppError("idempotency_key_reused", "this Idempotency-Key was used with a different method, path or body");
        }
        if (roleRank(principal.role) < roleRank(stored.role as RoleName)) {
          throw new ForbiddenError(`the stored answer was made while the key was ${stored.role}; it is ${principal.role} now`);
        }
        const body = stored.response_body === null ? undefined : (JSON.parse(opts.secretBox.openText(stored.response_body)) as T);
        return { replayed: true, result: { status: stored.status_code, body: body as T, headers: stored.response_headers } };
      }
      const result = await fn(tx, ctx);
      const headers: Record<string, string> = {};
      for (const h of KEPT_HEADERS) if (result.headers?.[h]) headers[h] = result.headers[h];
      await upsertIdempotencyRecord(tx, scope, key, {
        request_hash: hash,
        status_code: result.status,
        response_body: result.body === undefined ? null : opts.secretBox.seal(JSON.stringify(result.body)),
        response_headers: headers,
        role: principal.role,
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
