import {
  ApiKey,
  ApiKeyListQuery,
  ApiKeyWithSecret,
  CreateApiKeyBody,
  Empty,
  IdParams,
  page,
  RotateApiKeyBody,
  RotatedApiKey,
  Session,
  UpdateApiKeyBody,
} from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { permissionsOf } from "../../services/access/context.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["api-keys"];
const operator = { role: "operator" as const };

const apiKeyRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const keys = deps.services.apiKeys;

  app.get(
    "/v1/auth/session",
    { schema: { tags: ["auth"], summary: "The tenant and role of the calling key", response: { 200: Session, ...problems(401) } }, config: { auth: "any" } },
    async (req) => {
      const p = req.principal!;
      return { tenant_id: p.tenantId, tenant_name: p.tenantName, role: p.role, key_id: p.keyId, key_prefix: p.keyPrefix, permissions: permissionsOf(p.role) };
    },
  );

  app.get(
    "/v1/api-keys",
    { schema: { tags, summary: "List API keys", querystring: ApiKeyListQuery, response: { 200: page(ApiKey), ...authProblems } }, config: operator },
    async (req) => keys.list(deps.sql, req.ctx(), req.query),
  );

  app.post(
    "/v1/api-keys",
    {
      schema: {
        tags,
        summary: "Create an API key (the secret is shown once)",
        description: "No key can create a key above its own role.",
        body: CreateApiKeyBody,
        response: { 201: ApiKeyWithSecret, ...writeProblems },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await keys.create(tx, ctx, req.body);
        return { status: 201, body, headers: { location: `/v1/api-keys/${body.id}` } };
      }),
  );

  app.get(
    "/v1/api-keys/:id",
    { schema: { tags, summary: "Read an API key", params: IdParams, response: { 200: ApiKey, ...authProblems, ...problems(404) } }, config: operator },
    async (req) => keys.get(deps.sql, req.ctx(), req.params.id),
  );

  app.patch(
    "/v1/api-keys/:id",
    {
      schema: {
        tags,
        summary: "Update an API key's name, role or expiry",
        description:
          "A key changes only itself and keys of a lower role (a speaker's node key from the admin role up), and never raises a key above its own role.",
        params: IdParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKey, ...writeProblems, ...problems(404) },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await keys.update(tx, ctx, req.params.id, req.body) })),
  );

  app.delete(
    "/v1/api-keys/:id",
    {
      schema: {
        tags,
        summary: "Revoke an API key",
        description: "A key revokes itself and keys of a lower role (a speaker's node key from the admin role up); superadmins also revoke one another's keys.",
        params: IdParams,
        response: { 204: Empty, ...writeProblems, ...problems(404) },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        await keys.revoke(tx, ctx, req.params.id);
        return { status: 204, body: undefined };
      }),
  );

  app.post(
    "/v1/api-keys/:id/rotate",
    {
      schema: {
        tags,
        summary: "Rotate an API key's secret (your own) or revoke another key",
        description:
          "Rotating the calling key answers its new secret once; the old secret keeps working for `grace_seconds` (default 0). " +
          "Rotating another key (one the caller may manage) revokes it at once and answers it with `secret: null`: no key is handed " +
          "another key's secret. Its holder needs a new key.",
        params: IdParams,
        body: RotateApiKeyBody,
        response: { 200: RotatedApiKey, ...writeProblems, ...problems(404) },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await keys.rotate(tx, ctx, req.params.id, req.body) })),
  );
};

export default apiKeyRoutes;
