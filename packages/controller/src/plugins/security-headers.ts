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
  const path = url.split("?", 1)[0] ?? "";
  return path === "/" || path === "/console" || path.startsWith("/console/");
}

export default fp(async function securityHeadersPlugin(app: FastifyInstance) {
  app.addHook("onSend", (req, reply, payload, done) => {
    reply.header("x-content-type-options", "nosniff");
    reply.header("x-frame-options", "DENY");
    const html = String(reply.getHeader("content-type") ?? "").startsWith("text/html");
    const policy = isConsole(req.url) ? CONSOLE_POLICY : html || req.url.startsWith("/docs") ? DOCS_POLICY : API_POLICY;
    reply.header("content-security-policy", policy);
    if (isConsole(req.url)) reply.header("referrer-policy", "no-referrer");
    done(null, payload);
  });
});
