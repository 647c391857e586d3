import { AppError, ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { CdnPreview, CdnPreviewBody, CdnSource, CreateCdnSourceBody, UpdateCdnSourceBody } from "@rlc/shared/schemas";
import { type CdnSourceRow, deleteCdnSource, findCdnSourceById, insertCdnSource, listCdnSources, updateCdnSource } from "../../db/cdn-sources.js";
import type { Db } from "../../db/connect.js";
import { findModuleById } from "../../db/modules.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../db/pg-errors.js";
import { type Page, toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { iso, isoRequired } from "../../lib/time.js";
import { FeedParseError, type FeedParseResult, parseJsonFeed, parseTextFeed } from "../../sources/cdn-parse.js";
import { JsonPathError, parseJsonPath } from "../../sources/json-path.js";
import { type OutboundClient, OutboundError, OutboundHttpError, OutboundRefusedError } from "../../sources/outbound.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { CDN_PREVIEW_LIMIT, takeRateLimit } from "../operations/rate-limit.js";
import { type OutboundRules, savedUrl } from "./outbound-rules.js";

export function toCdnSource(row: CdnSourceRow): CdnSource {
  return {
    id: row.id,
    module_id: row.module_id,
    url: row.url,
    format: row.format,
    json_path: row.json_path,
    enabled: row.enabled,
    allow_empty: row.allow_empty,
    last_refreshed_at: iso(row.last_refreshed_at),
    last_error: row.last_error,
    last_prefix_count: row.last_prefix_count,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

const FIELDS = ["url", "format", "json_path", "enabled", "allow_empty"] as const;
const view = (r: CdnSourceRow) => ({ url: r.url, format: r.format, json_path: r.json_path, enabled: r.enabled, allow_empty: r.allow_empty });
const SAMPLE = 100;

const invalid = (path: string, message: string) => new ValidationError(`${path}: ${message}`, [{ path, message }]);

/** format and json_path together: json needs a valid path, text takes none. */
function checkFormat(format: "text" | "json", jsonPath: string | null, where: "body" | "source"): string | null {
  if (format === "text") {
    if (jsonPath !== null && jsonPath !== "") throw invalid(`${where}.json_path`, "json_path applies only to format json");
    return null;
  }
  if (jsonPath === null || jsonPath === "") throw invalid(`${where}.json_path`, "format json needs a json_path (e.g. prefixes[*].ip_prefix)");
  try {
    parseJsonPath(jsonPath);
  } catch (err) {
    if (err instanceof JsonPathError) throw invalid(`${where}.json_path`, err.message);
    throw err;
  }
  return jsonPath;
}

const duplicate = (url: string) => new ConflictError(`the module already reads ${url} with this format and path`);

/**
 * A preview's fetch failure as an answer: the policy's refusals are 422 `outbound_refused`;
 * anything else the feed server did (status, timeout, size, not JSON) is a 400 naming the URL,
 * with the outbound error's code in `outbound_error`.
 */
function previewFailure(err: unknown, path: string): unknown {
  if (err instanceof OutboundRefusedError) {
    if (err.reason === "invalid_url") return invalid(path, err.message);
    return new AppError("outbound_refused", err.message, { extra: { reason: err.reason, ...(err.address ? { address: err.address } : {}) } });
  }
  if (err instanceof OutboundError) {
    const extra: Record<string, unknown> = { outbound_error: err.code };
    if (err instanceof OutboundHttpError) extra.http_status = err.status;
    return new ValidationError(`fetching the feed failed: ${err.message}`, [{ path, message: err.message }], extra);
  }
  if (err instanceof FeedParseError) return new ValidationError(err.message, [{ path, message: err.message }], { outbound_error: err.code });
  return err;
}

function previewOf(url: string, fetchedBytes: number, durationMs: number, parsed: FeedParseResult): CdnPreview {
  let v6 = 0;
  for (const p of parsed.prefixes) if (p.includes(":")) v6++;
  return {
    url,
    fetched_bytes: fetchedBytes,
    duration_ms: durationMs,
    prefix_count_v4: parsed.prefixes.length - v6,
    prefix_count_v6: v6,
    masked: parsed.masked,
    rejected: parsed.rejected,
    sample: parsed.prefixes.slice(0, SAMPLE),
    rejected_sample: parsed.rejectedSample,
  };
}

/**
 * `sql` serves the previews (they read and write nothing else); `outbound` fetches them and
 * `rules`, the outbound policy, checks a URL when a source is written.
 */
/** The module a source belongs to, or 404 (ingest sits below route-lists: it reads the row, not the module service). */
async function mustFindModule(db: Db, tenantId: string, id: string) {
  const row = await findModuleById(db, tenantId, id);
  if (!row) throw new NotFoundError("module", id);
  return row;
}

export function createCdnSourceService(deps: { audit: AuditWriter; sql: Db; outbound: OutboundClient; rules: OutboundRules }) {
  const { audit } = deps;
  const mustFind = async (db: Db, tenantId: string, moduleId: string, id: string, forUpdate = false) => {
    const row = await findCdnSourceById(db, tenantId, moduleId, id, forUpdate);
    if (!row) throw new NotFoundError("CDN source", id);
    return row;
  };

  async function fetchAndParse(outbound: OutboundClient, input: { url: string; format: "text" | "json"; jsonPath: string | null }, path: string) {
    const started = performance.now();
    try {
      const res = await outbound.request(input.url, { headers: { accept: input.format === "json" ? "application/json" : "text/plain, */*" } });
      const text = res.body.toString("utf8");
      const parsed = input.format === "json" ? parseJsonFeed(text, input.jsonPath!) : parseTextFeed(text);
      return previewOf(input.url, res.fetchedBytes, Math.round(performance.now() - started), parsed);
    } catch (err) {
      throw previewFailure(err, path);
    }
  }

  return {
    async create(tx: Db, ctx: RequestContext, moduleId: string, body: CreateCdnSourceBody): Promise<CdnSource> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, moduleId);
      const format = body.format ?? "text";
      const jsonPath = checkFormat(format, body.json_path ?? null, "body");
      const url = savedUrl(deps.rules, body.url, "url").href;
      const row: CdnSourceRow = {
        id: uuidv7(),
        tenant_id: module.tenant_id,
        module_id: module.id,
        url,
        format,
        json_path: jsonPath,
        enabled: body.enabled ?? true,
        allow_empty: body.allow_empty ?? false,
        last_refreshed_at: null,
        last_error: null,
        last_prefix_count: null,
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      let inserted: boolean;
      try {
        inserted = await insertCdnSource(tx, row);
      } catch (err) {
        // The module was deleted between the lookup and the insert.
        throw isForeignKeyViolation(err) ? new NotFoundError("module", moduleId) : err;
      }
      if (!inserted) throw duplicate(url);
      await audit.record(tx, ctx, {
        action: "create",
        resource_type: "cdn_source",
        resource_id: row.id,
        summary: `CDN source ${url} added to module ${module.name}`,
        changes: changesOf(null, view(row), FIELDS),
      });
      return toCdnSource(row);
    },

    async list(ctx: RequestContext, moduleId: string, q: { cursor?: string | undefined; limit: number }): Promise<Page<CdnSource>> {
      const module = await mustFindModule(deps.sql, ctx.principal.tenantId, moduleId);
      const afterId = afterIdOf(q.cursor);
      const rows = await listCdnSources(deps.sql, module.tenant_id, module.id, { afterId, limit: q.limit });
      return toPage(rows, q.limit, (r) => [r.id], toCdnSource);
    },

    async get(ctx: RequestContext, moduleId: string, id: string): Promise<CdnSource> {
      const module = await mustFindModule(deps.sql, ctx.principal.tenantId, moduleId);
      return toCdnSource(await mustFind(deps.sql, module.tenant_id, module.id, id));
    },

    async update(tx: Db, ctx: RequestContext, moduleId: string, id: string, body: UpdateCdnSourceBody): Promise<CdnSource> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, moduleId);
      const before = await mustFind(tx, module.tenant_id, module.id, id, true);
      const format = body.format ?? before.format;
      // Switching to text drops the path unless the body names one (which is then refused).
      const pathWritten = body.json_path !== undefined ? body.json_path : format === "text" ? null : before.json_path;
      const after: CdnSourceRow = {
        ...before,
        url: body.url === undefined ? before.url : savedUrl(deps.rules, body.url, "url").href,
        format,
        json_path: checkFormat(format, pathWritten, "body"),
        enabled: body.enabled ?? before.enabled,
        allow_empty: body.allow_empty ?? before.allow_empty,
        updated_at: ctx.now,
      };
      const changes = changesOf(view(before), view(after), FIELDS);
      if (Object.keys(changes).length === 0) return toCdnSource(before);
      let row: CdnSourceRow;
      try {
        row = await updateCdnSource(tx, module.tenant_id, module.id, id, after);
      } catch (err) {
        throw isUniqueViolation(err) ? duplicate(after.url) : err;
      }
      await audit.record(tx, ctx, {
        action: "update",
        resource_type: "cdn_source",
        resource_id: id,
        summary: `CDN source ${row.url} of module ${module.name} updated`,
        changes,
      });
      return toCdnSource(row);
    },

    async remove(tx: Db, ctx: RequestContext, moduleId: string, id: string): Promise<void> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, moduleId);
      const before = await mustFind(tx, module.tenant_id, module.id, id, true);
      await deleteCdnSource(tx, module.tenant_id, module.id, id);
      await audit.record(tx, ctx, {
        action: "delete",
        resource_type: "cdn_source",
        resource_id: id,
        summary: `CDN source ${before.url} removed from module ${module.name}`,
        changes: changesOf(view(before), null, FIELDS),
      });
    },

    /** Counts one preview call of the tenant, or throws 429 `rate_limited` (10 a minute per tenant). */
    countPreviewCall: (ctx: Pick<RequestContext, "principal" | "now">) => takeRateLimit(deps.sql, ctx.principal.tenantId, CDN_PREVIEW_LIMIT, ctx.now),

    /** Fetches and parses a URL the way refresh would, saving nothing. */
    async preview(ctx: RequestContext, moduleId: string, body: CdnPreviewBody): Promise<CdnPreview> {
      const { outbound } = deps;
      await mustFindModule(deps.sql, ctx.principal.tenantId, moduleId);
      const format = body.format ?? "text";
      const jsonPath = checkFormat(format, body.json_path ?? null, "body");
      let url: string;
      try {
        url = outbound.checkUrlForm(body.url).href;
      } catch (err) {
        throw previewFailure(err, "body.url");
      }
      return fetchAndParse(outbound, { url, format, jsonPath }, "body.url");
    },

    async previewSaved(ctx: RequestContext, moduleId: string, id: string): Promise<CdnPreview> {
      const module = await mustFindModule(deps.sql, ctx.principal.tenantId, moduleId);
      const source = await mustFind(deps.sql, module.tenant_id, module.id, id);
      return fetchAndParse(deps.outbound, { url: source.url, format: source.format, jsonPath: source.json_path }, "source.url");
    },
  };
}

export type CdnSourceService = ReturnType<typeof createCdnSourceService>;
