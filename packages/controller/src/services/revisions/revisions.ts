import { RenderError, renderBirdConfig } from "@rlc/shared/bird";
import type { BundlePeer } from "@rlc/shared/bundle";
import { AppError, ConflictError, NotFoundError } from "@rlc/shared/errors";
import { containsAddress, parseAddress } from "@rlc/shared/prefix";
import type { Db } from "../../db/connect.js";
import { listCommunityTitles } from "../../db/ingest-inputs.js";
import {
  deleteRevisions,
  findCurrentRevision,
  findRevision,
  listRevisionIds,
  listRevisions,
  lockTenantRevisions,
  type RevisionRow,
} from "../../db/revisions.js";
import { findSpeakerById, listAllSpeakers, listProtectedRevisionIds, type SpeakerRow } from "../../db/speakers.js";
import { decodeCursor, encodeCursor, toPage } from "../../lib/cursor.js";
import { isoRequired } from "../../lib/time.js";
import type { AuditEntry, AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { readTenantSettings } from "../operations/settings.js";
import type { RevisionCommitter } from "./revision-commit.js";
import type { RevisionContent, RevisionFamily } from "./revision-content.js";
import { diffRevisions } from "./revision-diff.js";
import type { RevisionStore } from "./revision-store.js";

export function toRevision(row: RevisionRow, currentId: number | null, appliedTo: { speaker_id: string; applied_at: string }[] = []) {
  return {
    revision_id: row.revision_id,
    created_at: isoRequired(row.created_at),
    created_by: row.created_by,
    reason: row.reason,
    rolled_back_from: row.rolled_back_from,
    digest: row.digest,
    prefix_count_v4: row.prefix_count_v4,
    prefix_count_v6: row.prefix_count_v6,
    input_prefix_count: row.input_prefix_count,
    dropped_prefix_count: row.dropped_prefix_count,
    modules: row.modules.map((m) => ({ action: "announce" as const, excluded_prefix_count: 0, ...m })),
    // Filled from the speakers' reports once deploys exist (speakers and apply).
    applied_to: appliedTo,
    is_current: row.revision_id === currentId,
  };
}

const EXCERPT_LINES = 200;

/** Which speakers run each revision now, and since when (Revision.applied_to). */
async function appliedByRevision(db: Db, tenantId: string): Promise<Map<number, { speaker_id: string; applied_at: string }[]>> {
  const out = new Map<number, { speaker_id: string; applied_at: string }[]>();
  for (const s of await listAllSpeakers(db, tenantId)) {
    if (s.applied_revision_id === null) continue;
    const list = out.get(s.applied_revision_id) ?? [];
    list.push({ speaker_id: s.id, applied_at: (s.applied_at ?? s.last_report_at ?? s.updated_at).toISOString() });
    out.set(s.applied_revision_id, list);
  }
  return out;
}

/**
 * The agent's renderer refuses a speaker and peers that BIRD could not run (an IPv6 family over
 * an IPv4 neighbour without an IPv6 next hop, say): that is the tenant's configuration, a 409
 * naming the field, not a server error.
 */
function renderPreview(...args: Parameters<typeof renderBirdConfig>): ReturnType<typeof renderBirdConfig> {
  try {
    return renderBirdConfig(...args);
  } catch (err) {
    if (err instanceof RenderError) throw new ConflictError(`the speaker's configuration does not render: ${err.message}`, { path: err.path });
    throw err;
  }
}

/**
 * The BIRD version a speaker's last report names (`bird.version` of `show status`): what its
 * agent renders for. Null when it never reported one, or BIRD did not answer that report.
 */
function reportedBirdVersion(speaker: Pick<SpeakerRow, "last_report"> | null | undefined): string | null {
  const version = (speaker?.last_report as { bird?: { version?: unknown } | null } | null)?.bird?.version;
  return typeof version === "string" && version !== "" ? version : null;
}

/**
 * A speaker's peers as its bundle carries them, passwords masked, for a preview. Deploy answers
 * it (previewPeersOf): revisions sits below deploy in the areas' order, so it is handed over in
 * create-services.ts rather than imported.
 */
export type PreviewPeers = (db: Db, tenantId: string, speakerId: string) => Promise<BundlePeer[]>;

export function createRevisionService(deps: {
  sql: Db;
  audit: AuditWriter;
  revisions: RevisionStore;
  committer: RevisionCommitter;
  previewPeers: PreviewPeers;
}) {
  const mustFind = async (db: Db, tenantId: string, id: number) => {
    const row = await findRevision(db, tenantId, id);
    if (!row) throw new NotFoundError("revision", id);
    return row;
  };
  const content = async (db: Db, tenantId: string, id: number): Promise<RevisionContent> => {
    const c = await deps.revisions.content(db, tenantId, id);
    if (!c) throw new NotFoundError("revision", id);
    return c;
  };
  const currentId = async (db: Db, tenantId: string) => (await findCurrentRevision(db, tenantId))?.revision_id ?? null;

  return {
    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number }) {
      const beforeId = q.cursor ? decodeCursor(q.cursor, ["number"])[0]! : null;
      const rows = await listRevisions(deps.sql, ctx.principal.tenantId, { beforeId, limit: q.limit });
      const cur = await currentId(deps.sql, ctx.principal.tenantId);
      const applied = await appliedByRevision(deps.sql, ctx.principal.tenantId);
      return toPage(
        rows,
        q.limit,
        (r) => [r.revision_id],
        (r) => toRevision(r, cur, applied.get(r.revision_id)),
      );
    },

    async get(ctx: RequestContext, id: number) {
      const row = await mustFind(deps.sql, ctx.principal.tenantId, id);
      return toRevision(row, await currentId(deps.sql, ctx.principal.tenantId), (await appliedByRevision(deps.sql, ctx.principal.tenantId)).get(id));
    },

    /** Sorted by address (IPv4 first); the cursor is the position in that order. */
    async prefixes(
      ctx: RequestContext,
      id: number,
      q: {
        cursor?: string | undefined;
        limit: number;
        family?: number | undefined;
        community?: string | undefined;
        module_id?: string | undefined;
        contains?: string | undefined;
      },
    ) {
      const c = await content(deps.sql, ctx.principal.tenantId, id);
      let address: ReturnType<typeof parseAddress> | null = null;
      if (q.contains !== undefined) {
        try {
          address = parseAddress(q.contains);
        } catch (err) {
          throw new AppError("validation_failed", `contains: ${(err as Error).message}`, {
            errors: [{ path: "query.contains", message: "must be an IPv4 or IPv6 address" }],
          });
        }
      }
      const families: [RevisionFamily, 4 | 6][] = [];
      if (q.family !== 6) families.push([c.v4, 4]);
      if (q.family !== 4) families.push([c.v6, 6]);
      // The module filter compares indexes: -1 (no such module) matches nothing.
      const moduleIndex = q.module_id === undefined ? -1 : c.modules.indexOf(q.module_id);
      const start = q.cursor ? decodeCursor(q.cursor, ["number"])[0]! + 1 : 0;
      const items: { prefix: string; family: 4 | 6; communities: string[]; module_ids: string[] }[] = [];
      let last = -1;
      // The cursor is the position in IPv4-then-IPv6 order of the families asked for.
      let base = 0;
      for (const [list, family] of families) {
        for (let i = Math.max(0, start - base); i < list.length; i++) {
          const tag = list.tagAt(i);
          if (q.community !== undefined && !tag.communities.includes(q.community)) continue;
          if (q.module_id !== undefined && !tag.modules.includes(moduleIndex)) continue;
          if (address && !containsAddress(list.prefixAt(i), address)) continue;
          if (items.length === q.limit) return { items, next_cursor: encodeCursor([last]), has_more: true };
          const [prefix, communities, moduleIds] = list.at(i);
          items.push({ prefix, family, communities, module_ids: moduleIds });
          last = base + i;
        }
        base += list.length;
      }
      return { items, next_cursor: null, has_more: false };
    },

    async preview(ctx: RequestContext, id: number, speakerId?: string) {
      const communityTitles = await listCommunityTitles(deps.sql, ctx.principal.tenantId);
      const row = await mustFind(deps.sql, ctx.principal.tenantId, id);
      const speaker = speakerId === undefined ? null : await findSpeakerById(deps.sql, ctx.principal.tenantId, speakerId);
      if (speakerId !== undefined && !speaker) throw new NotFoundError("speaker", speakerId);
      const communityList = [...communityTitles].map(([community, title]) => ({ id: community, community, title }));
      // A preview is read by viewers: a peer's password renders as a mask, never opened.
      const peers = speaker ? await deps.previewPeers(deps.sql, ctx.principal.tenantId, speaker.id) : [];
      const c = await content(deps.sql, ctx.principal.tenantId, id);
      const perTag = new Int32Array(c.tags.length);
      for (const list of [c.v4, c.v6]) for (const t of list.tags) perTag[t]!++;
      const counts = new Map<string, number>();
      c.tags.forEach((tag, t) => {
        if (!tag.communities.length) counts.set("", (counts.get("") ?? 0) + perTag[t]!);
        for (const cm of tag.communities) counts.set(cm, (counts.get(cm) ?? 0) + perTag[t]!);
      });
      const settings = await readTenantSettings(deps.sql, ctx.principal.tenantId);
      const bird = (settings.BIRD ?? {}) as Record<string, unknown>;
      // Each community set renders as one static protocol, one line a route: keeping 200
      // routes of each set gives the same first 200 lines as the whole revision would.
      const setKeys = c.tags.map((t) => t.communities.join(","));
      const cap = (list: RevisionFamily) => {
        const perSet = new Map<string, number>();
        const out: [string, string[]][] = [];
        for (let i = 0; i < list.length; i++) {
          const t = list.tags[i]!;
          const n = perSet.get(setKeys[t]!) ?? 0;
          perSet.set(setKeys[t]!, n + 1);
          if (n < EXCERPT_LINES) out.push([list.prefixAt(i), c.tags[t]!.communities]);
        }
        return out;
      };
      // Rendered as the speaker's agent renders it: for the BIRD it runs (shared/bird/version.ts).
      const birdVersion = reportedBirdVersion(speaker);
      const rendered = renderPreview(
        {
          tenant_id: ctx.principal.tenantId,
          speaker_id: speaker?.id ?? "00000000-0000-0000-0000-000000000000",
          revision_id: row.revision_id,
          sequence: 0,
          issued_at: ctx.now.toISOString(),
          expires_at: ctx.now.toISOString(),
          digest: row.digest,
          speaker: speaker
            ? { router_id: speaker.router_id, asn: Number(speaker.asn), policies_json: speaker.policies_json }
            : {
                router_id: typeof bird.router_id === "string" ? bird.router_id : "192.0.2.1",
                asn: typeof bird.local_asn === "number" ? bird.local_asn : 64512,
                policies_json: {},
              },
          bird,
          communities: communityList,
          peers,
          prefixes: { v4: cap(c.v4), v6: cap(c.v6) },
        },
        { mode: "include", birdVersion },
      );
      const first = Object.values(rendered.files)[0] ?? "";
      const text = typeof first === "string" ? first : first.toString("utf8");
      return {
        revision_id: row.revision_id,
        digest: row.digest,
        prefix_count_v4: row.prefix_count_v4,
        prefix_count_v6: row.prefix_count_v6,
        by_community: [...counts]
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([community, prefix_count]) => ({
            community: community || null,
            title: community ? (communityTitles.get(community) ?? null) : null,
            prefix_count,
          })),
        bird_version: birdVersion,
        bird_config_excerpt: text.split("\n").slice(0, EXCERPT_LINES).join("\n"),
      };
    },

    async diff(ctx: RequestContext, a: number, b: number, limit: number) {
      const d = await diffRevisions(deps.revisions, deps.sql, ctx.principal.tenantId, a, b);
      return {
        from: a,
        to: b,
        added: d.added.slice(0, limit),
        removed: d.removed.slice(0, limit),
        changed: d.changed.slice(0, limit),
        added_count: d.added.length,
        removed_count: d.removed.length,
        changed_count: d.changed.length,
        truncated: d.added.length > limit || d.removed.length > limit || d.changed.length > limit,
      };
    },

    /** A new revision with the old content, which becomes current. */
    async rollback(tx: Db, ctx: RequestContext, id: number) {
      const tenantId = ctx.principal.tenantId;
      const current = await deps.committer.lockCurrent(tx, tenantId);
      const { tenant_id: _tenant, revision_id: _id, ...old } = await mustFind(tx, tenantId, id);
      // The old content decoded: stored as a change against the current one where that is smaller.
      const data = await content(tx, tenantId, id);
      const { row } = await deps.committer.commit(
        tx,
        tenantId,
        current,
        { ...old, created_at: ctx.now, created_by: `key:${ctx.principal.keyPrefix}`, reason: "rollback", rolled_back_from: id, content: data },
        ctx.afterCommit,
      );
      const revisionId = row.revision_id;
      await deps.audit.record(tx, ctx, {
        action: "rollback",
        resource_type: "revision",
        resource_id: String(revisionId),
        summary: `revision ${revisionId} made from revision ${id} (rollback from ${current?.revision_id ?? "none"})`,
        changes: { current_revision_id: { from: current?.revision_id ?? null, to: revisionId } },
      });
      return toRevision(row, revisionId);
    },

    /** `GET /v1/revisions/prune/estimate`: what a prune would delete now, on the pool. */
    async estimatePrune(ctx: RequestContext) {
      return this.pruneEstimate(deps.sql, ctx.principal.tenantId, ctx.now);
    },
    /** Never the current revision, nor one a speaker has as desired or applied. */
    async pruneEstimate(db: Db, tenantId: string, now: Date, protectedIds: Set<number> = new Set()) {
      const settings = await readTenantSettings(db, tenantId);
      const retention = typeof settings.revision_retention_minutes === "number" ? settings.revision_retention_minutes : 0;
      const rows = await listRevisionIds(db, tenantId);
      // Speakers' desired and applied revisions are kept on every path: route, job and policy.
      const speakers = await listProtectedRevisionIds(db, tenantId);
      const current = rows.length ? rows[rows.length - 1]!.revision_id : null;
      const cutoff = retention > 0 ? new Date(now.getTime() - retention * 60_000) : null;
      const kept = { current: 0, applied: 0, within_retention: 0 };
      const candidates: number[] = [];
      for (const r of rows) {
        if (r.revision_id === current) kept.current++;
        else if (protectedIds.has(r.revision_id) || speakers.has(r.revision_id)) kept.applied++;
        else if (!cutoff || r.created_at >= cutoff) kept.within_retention++;
        else candidates.push(r.revision_id);
      }
      return {
        retention_minutes: retention,
        cutoff: cutoff ? cutoff.toISOString() : null,
        candidate_count: candidates.length,
        candidate_revision_ids: candidates,
        kept_count: rows.length - candidates.length,
        kept_reasons: kept,
      };
    },

    /** Deletes the candidates (or only says which with `dryRun`); audited, as the calling key, when it deletes. */
    async prune(tx: Db, ctx: Pick<RequestContext, "principal" | "requestId" | "now" | "afterCommit">, dryRun: boolean, protectedIds: Set<number> = new Set()) {
      return this.pruneWith(tx, ctx.principal.tenantId, ctx.now, dryRun, (entry) => deps.audit.record(tx, ctx, entry), protectedIds);
    },

    /**
     * `prune` for any actor: `record` writes the audit record of the deletion in `tx` (a key's,
     * or the scheduler's and a maintenance policy's, with its `policy_id`).
     */
    async pruneWith(
      tx: Db,
      tenantId: string,
      now: Date,
      dryRun: boolean,
      record: (entry: AuditEntry) => Promise<unknown>,
      protectedIds: Set<number> = new Set(),
    ) {
      await lockTenantRevisions(tx, tenantId);
      const est = await this.pruneEstimate(tx, tenantId, now, protectedIds);
      // A dry run counts what it would delete, the same figure a real prune would answer.
      if (dryRun)
        return {
          deleted_count: est.candidate_revision_ids.length,
          deleted_revision_ids: est.candidate_revision_ids,
          kept_count: est.kept_count,
          dry_run: true,
        };
      // A kept revision stored as a change against a deleted one is stored whole first.
      await deps.revisions.rebaseDependents(tx, tenantId, est.candidate_revision_ids);
      const deleted = await deleteRevisions(tx, tenantId, est.candidate_revision_ids);
      if (deleted) {
        await record({
          action: "delete",
          resource_type: "revision",
          resource_id: null,
          summary: `pruned ${deleted} revision(s): ${est.candidate_revision_ids.join(", ")}`,
          changes: { revision_ids: { from: est.candidate_revision_ids, to: null } },
        });
      }
      return { deleted_count: deleted, deleted_revision_ids: est.candidate_revision_ids, kept_count: est.kept_count, dry_run: false };
    },
  };
}

export type RevisionService = ReturnType<typeof createRevisionService>;
