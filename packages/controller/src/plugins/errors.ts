import { AppError, type ErrorCode, errorStatus, type FieldError } from "@rlc/shared/errors";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from "fastify-type-provider-zod";
import FindMyWay from "find-my-way";
import { type DatabaseHealth, isConnectionError } from "../lib/database-health.js";
import { problemBody } from "../lib/problem.js";

export function sendProblem(
  req: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  more: { errors?: FieldError[] | undefined; extra?: Record<string, unknown> | undefined; headers?: Record<string, string> | undefined } = {},
) {
  const body = problemBody(code, detail, { instance: req.url, requestId: req.id, errors: more.errors, extra: more.extra });
  if (more.headers) reply.headers(more.headers);
  return reply.code(errorStatus[code]).type("application/problem+json").serializer(JSON.stringify).send(body);
}

function validationErrors(err: FastifyError): FieldError[] {
  const context = (err as { validationContext?: string }).validationContext ?? "body";
  const prefix = context === "querystring" ? "query" : context;
  return (err.validation ?? []).map((v) => {
    const path = v.instancePath ? v.instancePath.split("/").filter(Boolean).join(".") : "";
    return { path: path ? `${prefix}.${path}` : prefix, message: v.message ?? "invalid" };
  });
}

/** Fastify's own errors (parsing, limits) mapped onto the closed code set. */
function fastifyCode(err: FastifyError): { code: ErrorCode; detail: string } | null {
  switch (err.code) {
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return { code: "unsupported_media_type", detail: err.message };
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return { code: "payload_too_large", detail: "the request body is over the limit" };
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return { code: "invalid_json", detail: err.message };
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return { code: "validation_failed", detail: err.message };
  }
  if (err instanceof SyntaxError && err.statusCode === 400) return { code: "invalid_json", detail: `the body is not valid JSON: ${err.message}` };
  const status = err.statusCode ?? 500;
  if (status === 413) return { code: "payload_too_large", detail: err.message };
  if (status === 415) return { code: "unsupported_media_type", detail: err.message };
  if (status === 404) return { code: "not_found", detail: err.message };
  if (status === 429) return { code: "rate_limited", detail: err.message };
  if (status >= 400 && status < 500) return { code: "validation_failed", detail: err.message };
  return null;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** problem+json for every error the server produces, 404 and 405 included. */
export default fp(async function errorsPlugin(app: FastifyInstance, opts: { databaseHealth?: DatabaseHealth } = {}) {
  // A mirror of the route table, to tell "no such path" (404) from "path without this method" (405).
  const routes = FindMyWay({ ignoreTrailingSlash: false });
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) {
      if ((METHODS as readonly string[]).includes(m)) {
        try {
          routes.on(m as (typeof METHODS)[number], route.url, () => {});
        } catch {
          // duplicate shapes (e.g. HEAD added by Fastify) are fine
        }
      }
    }
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "/";
    const allowed = METHODS.filter((m) => routes.find(m, path) !== null);
    if (allowed.length > 0) {
      return sendProblem(req, reply, "method_not_allowed", `${req.method} is not allowed on ${path}`, {
        headers: { allow: allowed.join(", ") },
      });
    }
    return sendProblem(req, reply, "not_found", `no route ${req.method} ${path}`);
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof AppError) {
      if (err.status >= 500) req.log.error({ err }, "request failed");
      // An internal error's text is the inside's (SQL, paths, a failed job's exception): logged
      // above with the request id, never answered. 502/503 messages are written for the caller.
      const detail = err.status === 500 ? "internal error" : err.message;
      return sendProblem(req, reply, err.code, detail, { errors: err.errors, extra: err.extra, headers: err.headers });
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const errors = validationErrors(err);
      return sendProblem(req, reply, "validation_failed", errors.map((e) => `${e.path}: ${e.message}`).join("; "), { errors });
    }
    if (isResponseSerializationError(err)) {
      req.log.error({ err, issues: err.cause.issues }, "response does not match its schema");
      return sendProblem(req, reply, "internal", "internal error");
    }
    const mapped = fastifyCode(err);
    if (mapped) return sendProblem(req, reply, mapped.code, mapped.detail);
    // The database went away under this request: a transaction was rolled back (or never
    // began), so nothing was half-written; the caller may retry.
    if (isConnectionError(err)) {
      opts.databaseHealth?.noteError(err);
      req.log.warn({ err }, "database unreachable");
      return sendProblem(req, reply, "database_unavailable", "the database cannot be reached; retry shortly", { headers: { "retry-after": "5" } });
    }
    req.log.error({ err }, "unhandled error");
    return sendProblem(req, reply, "internal", "internal error");
  });
});

/**
 * Fastify's `frameworkErrors`: a URL the router cannot decode (bad percent-encoding) or a path
 * parameter over the length limit, answered as problem+json like every other 400.
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  const detail = err.code === "FST_ERR_MAX_PARAM_LENGTH" ? "a path segment is too long" : "the URL is not valid (bad percent-encoding)";
  return sendProblem(req, reply, "validation_failed", detail);
}

/**
 * Fastify's `clientErrorHandler`: the HTTP parser refused the request line or headers (a
 * request-target that is neither a path nor an absolute URL, say). There is no request to
 * answer through Fastify, so the problem is written on the socket, which then closes.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: import("node:net").Socket) {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  // Written by hand, as every answer is: problem+json with a code of the closed set.
  const known: Record<string, [ErrorCode, string, string]> = {
    ERR_HTTP_REQUEST_TIMEOUT: ["request_timeout", "Request Timeout", "the request did not arrive whole within the request timeout"],
    HPE_HEADER_OVERFLOW: ["headers_too_large", "Request Header Fields Too Large", "the request's headers are over the size limit"],
  };
  const [code, reason, detail] = known[err.code ?? ""] ?? ["validation_failed", "Bad Request", "the HTTP request could not be parsed"];
  const status = errorStatus[code];
  const body = JSON.stringify(problemBody(code, detail));
  const type = "application/problem+json";
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: ${type}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}
