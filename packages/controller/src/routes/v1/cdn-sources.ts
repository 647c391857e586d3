import {
  CdnPreview,
  CdnPreviewBody,
  CdnSavedPreviewBody,
  CdnSource,
  CdnSourceListQuery,
  CreateCdnSourceBody,
  Empty,
  ModuleParams,
  ModuleSourceParams,
  page,
  UpdateCdnSourceBody,
} from "@rlc/shared/schemas";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { createOutboundRules } from "../../services/ingest/outbound-rules.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["cdn-sources"];
const operator = { role: "operator" as const };
const previewDescription =
  "Fetches and parses without saving anything. Counts are of distinct prefixes after masking, before aggregation and bogon " +
  "filtering; an empty feed answers 200 with zero counts. A URL the outbound policy refuses, by its form or at connect time, is a 422 " +
  "`outbound_refused`; a feed that fails otherwise (HTTP status, timeout, size, not JSON) is a 400 with `outbound_error`. " +
  "10 calls a minute per tenant (429 with `Retry-After`); every call counts except a 429. Nothing is saved, so `Idempotency-Key` is not needed.";

const cdnSourceRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const sources = deps.services.cdnSources;
  const rules = createOutboundRules(deps.outbound, deps.config.APP_OUTBOUND_ALLOW_CIDRS);
  // Before the body is parsed, so malformed calls count too (every call but a 429 counts).
  const rateLimited = async (req: FastifyRequest, _reply: unknown, payload: unknown) => {
    await sources.countPreviewCall(deps.sql, req.principal!.tenantId, deps.clock());
    return payload;
  };

  app.get(
    "/v1/modules/:module_id/cdn-sources",
    {
      schema: {
        tags,
        summary: "List a module's CDN sources",
        params: ModuleParams,
        querystring: CdnSourceListQuery,
        response: { 200: page(CdnSource), ...authProblems, ...problems(404) },
      },
    },
    async (req) => sources.list(deps.sql, req.ctx(), req.params.module_id, req.query),
  );

  app.post(
    "/v1/modules/:module_id/cdn-sources",
    {
      schema: {
        tags,
        summary: "Add a CDN source",
        description:
          "Allowed on every module type. `url`: http or https, no credentials; a literal address the outbound policy refuses is a 400. " +
          "`format: json` needs a `json_path`. The same URL, format and path twice in a module is a 409.",
        params: ModuleParams,
        body: CreateCdnSourceBody,
        response: { 201: CdnSource, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await sources.create(tx, ctx, req.params.module_id, req.body, rules);
        return { status: 201, body, headers: { location: `/v1/modules/${req.params.module_id}/cdn-sources/${body.id}` } };
      }),
  );

  app.post(
    "/v1/modules/:module_id/cdn-sources/preview",
    {
      schema: {
        tags,
        summary: "Preview a feed URL",
        description: previewDescription,
        params: ModuleParams,
        body: CdnPreviewBody,
        response: { 200: CdnPreview, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
      preParsing: rateLimited,
    },
    async (req) => sources.preview(deps.sql, req.ctx(), req.params.module_id, req.body, deps.outbound),
  );

  app.get(
    "/v1/modules/:module_id/cdn-sources/:source_id",
    { schema: { tags, summary: "Read a CDN source", params: ModuleSourceParams, response: { 200: CdnSource, ...authProblems, ...problems(404) } } },
    async (req) => sources.get(deps.sql, req.ctx(), req.params.module_id, req.params.source_id),
  );

  app.patch(
    "/v1/modules/:module_id/cdn-sources/:source_id",
    {
      schema: {
        tags,
        summary: "Update a CDN source",
        description: "Switching `format` to text drops the `json_path`.",
        params: ModuleSourceParams,
        body: UpdateCdnSourceBody,
        response: { 200: CdnSource, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => ({
        status: 200,
        body: await sources.update(tx, ctx, req.params.module_id, req.params.source_id, req.body, rules),
      })),
  );

  app.delete(
    "/v1/modules/:module_id/cdn-sources/:source_id",
    { schema: { tags, summary: "Delete a CDN source", params: ModuleSourceParams, response: { 204: Empty, ...writeProblems, ...problems(404) } } },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        await sources.remove(tx, ctx, req.params.module_id, req.params.source_id);
        return { status: 204, body: undefined };
      }),
  );

  app.post(
    "/v1/modules/:module_id/cdn-sources/:source_id/preview",
    {
      schema: {
        tags,
        summary: "Preview a saved CDN source",
        description: previewDescription,
        params: ModuleSourceParams,
        body: CdnSavedPreviewBody,
        response: { 200: CdnPreview, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
      preParsing: rateLimited,
    },
    async (req) => sources.previewSaved(deps.sql, req.ctx(), req.params.module_id, req.params.source_id, deps.outbound),
  );
};

export default cdnSourceRoutes;
