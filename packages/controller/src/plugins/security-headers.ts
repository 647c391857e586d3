import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * The API reference at /docs is one HTML page the controller serves; its scripts and styles
 * come from /docs/static, so the policy allows only this origin (Swagger UI sets inline styles
 * from script, hence 'unsafe-inline' for styles alone). The console (/ and /console/…) loads
 * only its own script and stylesheet files from this origin: no inline script or style, no
 * other origin, and it talks to nothing but this origin's /v1. JSON answers get a policy that
 * allows nothing, so a body a browser is tricked into rendering runs no script either.
 */
const DOCS_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";
const CONSOLE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "manifest-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const API_POLICY = "default-src 'none'; frame-ancestors 'none'";

function isConsole(url: string): boolean {
  const end = url.indexOf("?");
  const path = end === -1 ? url : url.slice(0, end);
  return path === "/" || path === "/console" || path.startsWith("/console/");
}

/**
 * The headers every answer carries: its request id, and the policies above. One synchronous
 * hook for all of them (every request runs it; an async hook costs a promise a request).
 */
export default fp(async function securityHeadersPlugin(app: FastifyInstance) {
  app.addHook("onSend", (req, reply, payload, done) => {
    const url = req.url;
    const onConsole = isConsole(url);
    reply.header("x-request-id", req.id);
    reply.header("x-content-type-options", "nosniff");
    reply.header("x-frame-options", "DENY");
    const html = !onConsole && String(reply.getHeader("content-type") ?? "").startsWith("text/html");
    reply.header("content-security-policy", onConsole ? CONSOLE_POLICY : html || url.startsWith("/docs") ? DOCS_POLICY : API_POLICY);
    if (onConsole) reply.header("referrer-policy", "no-referrer");
    done(null, payload);
  });
});
