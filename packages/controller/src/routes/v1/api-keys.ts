import {
  ApiKey,
  ApiKeyListQuery,
  ApiKeyWithSecret,
  CreateApiKeyBody,
  IdParams,
  RotateApiKeyBody,
  RotatedApiKey,
  Session,
  UpdateApiKeyBody,
} from "@rlc/shared/schemas";
import { permissionsOf } from "../../services/access/context.js";
import { operator } from "../access.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import { compiledSerializer, problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const apiKeyRoutes = routeFile(["api-keys"], "apiKeys", async (app, keys, { tags }) => {
  app.get(
    "/v1/auth/session",
    {
      schema: { tags: ["auth"], summary: "The tenant and role of the calling key", response: { 200: Session, ...problems(401) } },
      config: { auth: "any" },
      // Built here from the key's principal: compiled, not parsed (see compiledSerializer).
      serializerCompiler: compiledSerializer,
    },
    // Not async: the answer needs nothing to wait for (an async handler costs a promise and a microtask turn).
    (req) => {
      const p = req.principal!;
      return {
        tenant_id: p.tenantId,
        tenant_name: p.tenantName,
        role: p.role,
        key_id: p.keyId,
        key_prefix: p.keyPrefix,
        permissions: permissionsOf(p.role, p.tenantName),
      };
    },
  );

  resourceRoutes(
    app,
    resource({
      tags,
      path: "/v1/api-keys",
      id: "id",
      params: IdParams,
      one: "an API key",
      many: "API keys",
      item: ApiKey,
      // DELETE revokes a key (sets its `revoked_at`); the row stays.
      service: { ...keys, remove: keys.revoke },
      config: operator,
      list: { querystring: ApiKeyListQuery },
      create: {
        summary: "Create an API key (the secret is shown once)",
        description:
          "No key can create a key above its own role. Node keys are not made here: a speaker's node key comes from enrolling with the " +
          "speaker's enrollment token, which only admins and superadmins receive.",
        body: CreateApiKeyBody,
        response: ApiKeyWithSecret,
      },
      read: {},
      update: {
        summary: "Update an API key's name, role or expiry",
        description:
          "A key changes only itself and keys of a lower role (a speaker's node key from the admin role up), and never raises a key above its own role.",
        body: UpdateApiKeyBody,
      },
      remove: {
        summary: "Revoke an API key",
        description: "A key revokes itself and keys of a lower role (a speaker's node key from the admin role up); superadmins also revoke one another's keys.",
      },
    }),
  );

  app.post(
    "/v1/api-keys/:id/rotate",
    {
      schema: {
        tags,
        summary: "Rotate an API key's secret",
        description:
          "Answers the key's new secret once; the old secret keeps working for `grace_seconds` (default 0). A key rotates itself and any key " +
          "of a lower role (a speaker's node key from the admin role up); another key of its own role gets 403 `forbidden` (superadmins " +
          "included), so nobody receives a secret to act under a peer's name.",
        params: IdParams,
        body: RotateApiKeyBody,
        response: { 200: RotatedApiKey, ...writeProblems, ...problems(404) },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await keys.rotate(tx, ctx, req.params.id, req.body) })),
  );
});

export default apiKeyRoutes;
