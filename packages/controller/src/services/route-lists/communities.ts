import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { Community, CreateCommunityBody, UpdateCommunityBody } from "@rlc/shared/schemas";
import {
  type CommunityRow,
  deleteCommunity,
  findCommunityById,
  findCommunityByValue,
  insertCommunity,
  listCommunities,
  updateCommunity,
} from "../../db/communities.js";
import type { Db } from "../../db/connect.js";
import { listModulesUsingCommunity } from "../../db/modules.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../db/pg-errors.js";
import { normaliseCommunity } from "../../lib/community-value.js";
import type { Page } from "../../lib/cursor.js";
import { pageById } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { isoRequired } from "../../lib/time.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";

export function toCommunity(row: CommunityRow): Community {
  return {
    id: row.id,
    community: row.community,
    title: row.title,
    description: row.description,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

const FIELDS = ["community", "title", "description"] as const;
const view = (r: CommunityRow) => ({ community: r.community, title: r.title, description: r.description });

function canonical(value: string): string {
  const result = normaliseCommunity(value);
  if (!result.ok) throw new ValidationError(`community: ${result.message}`, [{ path: "body.community", message: result.message }]);
  return result.value;
}

const taken = (community: string) => new ConflictError(`community ${community} already exists`);

export function createCommunityService(deps: { sql: Db; audit: AuditWriter }) {
  const { audit } = deps;
  const mustFind = async (db: Db, tenantId: string, id: string, forUpdate = false) => {
    const row = await findCommunityById(db, tenantId, id, forUpdate);
    if (!row) throw new NotFoundError("community", id);
    return row;
  };

  return {
    async create(tx: Db, ctx: RequestContext, body: CreateCommunityBody): Promise<Community> {
      const tenantId = ctx.principal.tenantId;
      const community = canonical(body.community);
      if (await findCommunityByValue(tx, tenantId, community)) throw taken(community);
      const row: CommunityRow = {
        id: uuidv7(),
        tenant_id: tenantId,
        community,
        title: body.title ?? "",
        description: body.description ?? "",
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      try {
        await insertCommunity(tx, row);
      } catch (err) {
        throw isUniqueViolation(err) ? taken(community) : err;
      }
      await audit.record(tx, ctx, {
        action: "create",
        resource_type: "community",
        resource_id: row.id,
        summary: `community ${community} created`,
        changes: changesOf(null, view(row), FIELDS),
      });
      return toCommunity(row);
    },

    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number; q?: string | undefined }): Promise<Page<Community>> {
      return pageById(q, (afterId) => listCommunities(deps.sql, ctx.principal.tenantId, { afterId, limit: q.limit, q: q.q }), toCommunity);
    },

    async get(ctx: RequestContext, id: string): Promise<Community> {
      return toCommunity(await mustFind(deps.sql, ctx.principal.tenantId, id));
    },

    async update(tx: Db, ctx: RequestContext, id: string, body: UpdateCommunityBody): Promise<Community> {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFind(tx, tenantId, id, true);
      const community = body.community === undefined ? before.community : canonical(body.community);
      if (community !== before.community && (await findCommunityByValue(tx, tenantId, community))) throw taken(community);
      const after: CommunityRow = {
        ...before,
        community,
        title: body.title ?? before.title,
        description: body.description ?? before.description,
        updated_at: ctx.now,
      };
      const changes = changesOf(view(before), view(after), FIELDS);
      if (Object.keys(changes).length === 0) return toCommunity(before);
      try {
        await updateCommunity(tx, tenantId, id, after);
      } catch (err) {
        throw isUniqueViolation(err) ? taken(community) : err;
      }
      await audit.record(tx, ctx, { action: "update", resource_type: "community", resource_id: id, summary: `community ${community} updated`, changes });
      return toCommunity(after);
    },

    async remove(tx: Db, ctx: RequestContext, id: string): Promise<void> {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFind(tx, tenantId, id, true);
      const modules = await listModulesUsingCommunity(tx, tenantId, id);
      if (modules.length > 0) {
        const names = modules.map((m) => m.name).join(", ");
        throw new ConflictError(`community ${before.community} is used by module${modules.length === 1 ? "" : "s"} ${names}`, { modules });
      }
      try {
        await deleteCommunity(tx, tenantId, id);
      } catch (err) {
        if (isForeignKeyViolation(err)) throw new ConflictError(`community ${before.community} was attached to a module meanwhile`);
        throw err;
      }
      await audit.record(tx, ctx, {
        action: "delete",
        resource_type: "community",
        resource_id: id,
        summary: `community ${before.community} deleted`,
        changes: changesOf(view(before), null, FIELDS),
      });
    },
  };
}

export type CommunityService = ReturnType<typeof createCommunityService>;
