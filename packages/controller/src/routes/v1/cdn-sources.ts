import {
  CdnPreview,
  CdnPreviewBody,
  CdnSavedPreviewBody,
  CdnSource,
  CdnSourceListQuery,
  CreateCdnSourceBody,
  ModuleParams,
  ModuleSourceParams,
  UpdateCdnSourceBody,
} from "@rlc/shared/schemas";
import type { FastifyRequest } from "fastify";
import { operator } from "../access.js";
import { collectionRoutes, resource as declareResource, itemRoutes } from "../resource-routes.js";
import { problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const previewDescription =
  "Fetches and parses without saving anything. Counts are of distinct prefixes after masking, before aggregation and bogon " +
  "filtering; an empty feed answers 200 with zero counts. A URL the outbound policy refuses, by its form or at connect time, is a 422 " +
  "`outbound_refused`; a feed that fails otherwise (HTTP status, timeout, size, not JSON) is a 400 with `outbound_error`. " +
  "10 calls a minute per tenant (429 with `Retry-After`); every call counts except a 429. Nothing is saved, so `Idempotency-Key` is not needed.";

const cdnSourceRoutes = routeFile(["cdn-sources"], "cdnSources", async (app, sources, { tags }) => {
  // Before the body is parsed, so malformed calls count too (every call but a 429 counts).
  const rateLimited = async (req: FastifyRequest, _reply: unknown, payload: unknown) => {
    await sources.countPreviewCall(req.ctx());
    return payload;
  };

  const resource = declareResource({
    tags,
    path: "/v1/modules/:module_id/cdn-sources",
    id: "source_id",
    params: ModuleSourceParams,
    parentParams: ModuleParams,
    one: "a CDN source",
    many: "CDN sources",
    item: CdnSource,
    // A source's URL is checked against the outbound policy when it is written (the service holds the rules).
    service: sources,
    list: { summary: "List a module's CDN sources", querystring: CdnSourceListQuery },
    create: {
      summary: "Add a CDN source",
      description:
        "Allowed on every module type. `url`: http or https, no credentials; a literal address the outbound policy refuses is a 400. " +
        "`format: json` needs a `json_path`. The same URL, format and path twice in a module is a 409.",
      body: CreateCdnSourceBody,
    },
    read: {},
    update: { description: "Switching `format` to text drops the `json_path`.", body: UpdateCdnSourceBody },
    remove: {},
  });
  collectionRoutes(app, resource);

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
    async (req) => sources.preview(req.ctx(), req.params.module_id, req.body),
  );

  itemRoutes(app, resource);

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
    async (req) => sources.previewSaved(req.ctx(), req.params.module_id, req.params.source_id),
  );
});

export default cdnSourceRoutes;
