import { gunzipSync, gzipSync } from "node:zlib";
import type { Db } from "../db/connect.js";
import { findRevisionContent } from "../db/revisions.js";
import type { RevisionContent } from "./revision-build.js";

export function encodeContent(content: RevisionContent): Buffer {
  // Level 1: a million prefixes compress ~8x in a fraction of a second; level 9 gains little.
  return gzipSync(JSON.stringify(content), { level: 1 });
}

export function decodeContent(data: Buffer): RevisionContent {
  return JSON.parse(gunzipSync(data).toString("utf8")) as RevisionContent;
}

/**
 * Revision contents by (tenant, revision). Revisions never change, so a decoded copy can be
 * kept in memory without ever going stale; the database stays the only source.
 */
export function createRevisionStore(opts: { entries?: number } = {}) {
  const max = opts.entries ?? 4;
  const cache = new Map<string, RevisionContent>();
  return {
    async content(db: Db, tenantId: string, revisionId: number): Promise<RevisionContent | undefined> {
      const key = `${tenantId}:${revisionId}`;
      const hit = cache.get(key);
      if (hit) {
        cache.delete(key);
        cache.set(key, hit);
        return hit;
      }
      const data = await findRevisionContent(db, tenantId, revisionId);
      if (!data) return undefined;
      const content = decodeContent(data);
      cache.set(key, content);
      while (cache.size > max) cache.delete(cache.keys().next().value!);
      return content;
    },
    /** A content just written: cached so the first reader does not decode it again. */
    remember(tenantId: string, revisionId: number, content: RevisionContent) {
      cache.set(`${tenantId}:${revisionId}`, content);
      while (cache.size > max) cache.delete(cache.keys().next().value!);
    },
  };
}

export type RevisionStore = ReturnType<typeof createRevisionStore>;
