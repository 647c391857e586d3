import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { CreateDohProfileBody, DohProfile, UpdateDohProfileBody } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import {
  type DohProfileRow,
  deleteDohProfile,
  findDohProfileById,
  findDohProfileByName,
  insertDohProfile,
  listDohProfiles,
  updateDohProfile,
} from "../../db/doh-profiles.js";
import { listModulesUsingDohProfile } from "../../db/modules.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../db/pg-errors.js";
import type { Page } from "../../lib/cursor.js";
import { pageById } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { MASKED_SECRET, type SecretBox } from "../../lib/secret-box.js";
import { isoRequired } from "../../lib/time.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { type OutboundRules, plainHttpAllowed, savedUrl } from "./outbound-rules.js";

/** Every read shows a header's name (what is sent) and a mask for its value (a token). */
const maskHeaders = (headers: Record<string, string>) => Object.fromEntries(Object.keys(headers).map((name) => [name, MASKED_SECRET]));

/** The header values of a stored profile in plain text, for the DoH queries only. */
export function openHeaders(box: SecretBox, row: Pick<DohProfileRow, "headers" | "headers_sealed">): Record<string, string> {
  if (!row.headers_sealed) return row.headers;
  return Object.fromEntries(Object.entries(row.headers).map(([name, value]) => [name, box.openText(value)]));
}

export const sealHeaders = (box: SecretBox, headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, box.seal(value)]));

export function toDohProfile(row: DohProfileRow): DohProfile {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    method: row.method,
    format: row.format,
    timeout_ms: row.timeout_ms,
    headers: maskHeaders(row.headers),
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

// Header values are not audited: they often carry an API token.
const FIELDS = ["name", "url", "method", "format", "timeout_ms"] as const;
const view = (r: DohProfileRow) => ({ name: r.name, url: r.url, method: r.method, format: r.format, timeout_ms: r.timeout_ms });
// Set by the client for every query; a profile must not override them.
const RESERVED_HEADERS = new Set(["host", "content-length", "content-type", "transfer-encoding", "connection", "accept-encoding"]);

/**
 * `********` stands for the stored value of the same header; anything else is a new value. When
 * the URL moves to another origin there is no stored value to keep (see `originOf`).
 */
function noMaskedValue(headers: Record<string, string>, stored: Record<string, string>, moved = false): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== MASKED_SECRET) out[name] = value;
    else if (moved) throw invalid(`headers.${name}`, `the url moves to another origin, which never receives the stored value: send the value again`);
    else if (Object.hasOwn(stored, name)) out[name] = stored[name]!;
    else throw invalid(`headers.${name}`, `"${MASKED_SECRET}" keeps a stored value, and the profile has no header ${name}`);
  }
  return out;
}

/**
 * Header values are bound to the origin (scheme, host, port) they were given for: a token for
 * one provider must not be sent to a server someone else names by editing the URL.
 */
function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null; // checkProfile refuses it
  }
}

const invalid = (path: string, message: string) => new ValidationError(`${path}: ${message}`, [{ path: `body.${path}`, message }]);
const nameTaken = (name: string) => new ConflictError(`a DoH profile named "${name}" already exists`);

function checkProfile(rules: OutboundRules, p: Pick<DohProfileRow, "url" | "method" | "format" | "headers">): string {
  const url = savedUrl(rules, p.url, "url");
  if (url.protocol === "http:" && !plainHttpAllowed(rules, url)) {
    throw invalid("url", "plain http is allowed only to an IP address inside APP_OUTBOUND_ALLOW_CIDRS; use https");
  }
  if (p.format === "json" && p.method === "POST") throw invalid("method", "the dns-json API is GET only (?name=&type=)");
  for (const name of Object.keys(p.headers)) {
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw invalid(`headers.${name}`, "this header is set by the client and cannot be overridden");
  }
  return url.href;
}

/**
 * Header values often carry an API token: they are sealed with the data key before they reach
 * the database and every read shows them as `********`. An update may send `********` back for a
 * header it keeps (a profile read, edited and written whole keeps its tokens), unless it moves
 * the URL to another origin: that drops every stored value the request does not send again.
 */
/** `rules`, the outbound policy, checks a profile's URL when it is written. */
export function createDohProfileService(deps: { sql: Db; audit: AuditWriter; secrets: SecretBox; rules: OutboundRules }) {
  const { audit } = deps;
  const mustFind = async (db: Db, tenantId: string, id: string, forUpdate = false) => {
    const row = await findDohProfileById(db, tenantId, id, forUpdate);
    if (!row) throw new NotFoundError("DoH profile", id);
    return row;
  };
  const assertNameFree = async (db: Db, tenantId: string, name: string | null, self: string | null) => {
    if (name === null) return;
    const other = await findDohProfileByName(db, tenantId, name);
    if (other && other.id !== self) throw nameTaken(name);
  };

  return {
    async create(tx: Db, ctx: RequestContext, body: CreateDohProfileBody): Promise<DohProfile> {
      const tenantId = ctx.principal.tenantId;
      const draft = { url: body.url, method: body.method ?? "GET", format: body.format ?? "wire", headers: body.headers ?? {} };
      const url = checkProfile(deps.rules, draft);
      const name = body.name ?? null;
      await assertNameFree(tx, tenantId, name, null);
      const row: DohProfileRow = {
        id: uuidv7(),
        tenant_id: tenantId,
        name,
        ...draft,
        url,
        headers: sealHeaders(deps.secrets, noMaskedValue(draft.headers, {})),
        headers_sealed: true,
        timeout_ms: body.timeout_ms ?? 3000,
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      try {
        await insertDohProfile(tx, row);
      } catch (err) {
        throw isUniqueViolation(err) && name !== null ? nameTaken(name) : err;
      }
      await audit.record(tx, ctx, {
        action: "create",
        resource_type: "doh_profile",
        resource_id: row.id,
        summary: `DoH profile ${name ?? row.url} created`,
        changes: changesOf(null, view(row), FIELDS),
      });
      return toDohProfile(row);
    },

    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number }): Promise<Page<DohProfile>> {
      return pageById(q, (afterId) => listDohProfiles(deps.sql, ctx.principal.tenantId, { afterId, limit: q.limit }), toDohProfile);
    },

    async get(ctx: RequestContext, id: string): Promise<DohProfile> {
      return toDohProfile(await mustFind(deps.sql, ctx.principal.tenantId, id));
    },

    async update(tx: Db, ctx: RequestContext, id: string, body: UpdateDohProfileBody): Promise<DohProfile> {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFind(tx, tenantId, id, true);
      const beforeHeaders = openHeaders(deps.secrets, before);
      // A new origin gets only the values this request sends: the stored ones are dropped.
      const moved = body.url !== undefined && originOf(body.url) !== originOf(before.url);
      const kept = moved ? {} : beforeHeaders;
      const nextHeaders = body.headers === undefined ? kept : noMaskedValue(body.headers, kept, moved);
      const next: DohProfileRow = {
        ...before,
        name: body.name === undefined ? before.name : body.name,
        url: body.url ?? before.url,
        method: body.method ?? before.method,
        format: body.format ?? before.format,
        timeout_ms: body.timeout_ms ?? before.timeout_ms,
        headers: nextHeaders,
        updated_at: ctx.now,
      };
      next.url = checkProfile(deps.rules, next);
      if (next.name !== before.name) await assertNameFree(tx, tenantId, next.name, id);
      const changes = changesOf(view(before), view(next), FIELDS);
      const headersChanged = JSON.stringify(beforeHeaders) !== JSON.stringify(nextHeaders);
      if (headersChanged) changes.headers = { from: "[not recorded]", to: "[not recorded]" };
      if (Object.keys(changes).length === 0 && before.headers_sealed) return toDohProfile(before);
      next.headers = sealHeaders(deps.secrets, nextHeaders);
      next.headers_sealed = true;
      try {
        await updateDohProfile(tx, tenantId, id, next);
      } catch (err) {
        throw isUniqueViolation(err) && next.name !== null ? nameTaken(next.name) : err;
      }
      await audit.record(tx, ctx, {
        action: "update",
        resource_type: "doh_profile",
        resource_id: id,
        summary: `DoH profile ${next.name ?? next.url} updated`,
        changes,
      });
      return toDohProfile(next);
    },

    async remove(tx: Db, ctx: RequestContext, id: string): Promise<void> {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFind(tx, tenantId, id, true);
      const modules = await listModulesUsingDohProfile(tx, tenantId, id);
      const label = before.name ?? before.url;
      if (modules.length > 0) {
        const names = modules.map((m) => m.name).join(", ");
        throw new ConflictError(`DoH profile ${label} is used by module${modules.length === 1 ? "" : "s"} ${names}`, { modules });
      }
      try {
        await deleteDohProfile(tx, tenantId, id);
      } catch (err) {
        if (isForeignKeyViolation(err)) throw new ConflictError(`DoH profile ${label} was attached to a module meanwhile`);
        throw err;
      }
      await audit.record(tx, ctx, {
        action: "delete",
        resource_type: "doh_profile",
        resource_id: id,
        summary: `DoH profile ${label} deleted`,
        changes: changesOf(view(before), null, FIELDS),
      });
    },
  };
}

export type DohProfileService = ReturnType<typeof createDohProfileService>;
