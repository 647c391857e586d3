import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * The API reference at /docs is the one HTML page the controller serves; its scripts and styles
 * come from /docs/static, so the policy allows only this origin (Swagger UI sets inline styles
 * from script, hence 'unsafe-inline' for styles alone). JSON answers get a policy that allows
 * nothing, so a body a browser is tricked into rendering runs no script either.
 */
const DOCS_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";
const API_POLICY = "default-src 'none'; frame-ancestors 'none'";

export default fp(async function securityHeadersPlugin(app: FastifyInstance) {
  app.addHook("onSend", async (req, reply) => {
    reply.header("x-content-type-options", "nosniff");
    reply.header("x-frame-options", "DENY");
    const html = String(reply.getHeader("content-type") ?? "").startsWith("text/html");
    reply.header("content-security-policy", html || req.url.startsWith("/docs") ? DOCS_POLICY : API_POLICY);
  });
});
