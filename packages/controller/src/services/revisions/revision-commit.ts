import { AppError } from "@rlc/shared/errors";
import type { Bus } from "../../bus/index.js";
import { type Db, withSavepoint } from "../../db/connect.js";
import { findCurrentRevision, insertRevision, lockTenantRevisions, type RevisionRow } from "../../db/revisions.js";
import { publishRevisionCreated } from "../../events/publish.js";
import { tablesOf, withdrawnFrom } from "./revision-align.js";
import type { ContentSplice, RevisionChange as RevisionBuildChange } from "./revision-build.js";
import type { RevisionContent } from "./revision-content.js";
import type { RevisionStore } from "./revision-store.js";

/**
 * What an apply of a new revision needs built with it (deploy's bundle sections). Typed here, so
 * that revisions import nothing of deploy: create-services.ts hands the deploy service in.
 */
export interface RevisionSections {
  /** Builds them in `tx`; answers what to run once it has committed, if anything. */
  prepareSections(tx: Db, tenantId: string, revisionId: number, splices?: RevisionSplices): Promise<(() => void) | undefined>;
}

/**
 * Where an incrementally built revision differs from revision `parentId` (BuiltRevision.change):
 * per family, parent entries [from, to) became entries [at, at + count); the rest is the same.
 */
export interface RevisionSplices {
  parentId: number;
  v4: readonly ContentSplice[];
  v6: readonly ContentSplice[];
}

/** A revision to commit: the row's own fields (the id and the time are the committer's). */
export type NewRevision = Omit<RevisionRow, "tenant_id" | "revision_id" | "created_at">;

export interface CommittedRevision {
  row: RevisionRow;
  /** Set when the sections could not be built: the revision stands, its first apply builds them. */
  sections_error: string | null;
  /** Milliseconds spent writing the row, and building the sections. */
  write_ms: number;
  sections_ms: number;
}

/**
 * The one place a revision is committed: the tenant's revision lock, the guard against a refresh
 * that withdraws too much, the row, the decoded copy kept in memory, the sections an apply of it
 * needs, and the revision.created event once the transaction commits. Ingest and rollback call it.
 */
export function createRevisionCommitter(deps: {
  revisions: RevisionStore;
  bus: Bus;
  sections?: RevisionSections | undefined;
  /** Where and when a revision stored past its chain's bound is rewritten whole: the pool, and `delayMs` after its commit (REVISION_WHOLE_DELAY_MS; storedForm). */
  rewrite?: { sql: Db; delayMs: number } | undefined;
}) {
  return {
    /** Takes the tenant's revision lock for the transaction and answers the current revision. */
    async lockCurrent(tx: Db, tenantId: string): Promise<RevisionRow | undefined> {
      await lockTenantRevisions(tx, tenantId);
      return findCurrentRevision(tx, tenantId);
    },

    /**
     * Refuses a content that would withdraw more than `maxDropPercent` of the current revision's
     * prefixes (revision_guard_tripped, 409), unless forced. `change`: how an incremental build
     * made `next` (BuiltRevision.change): when made from the current revision's content, only
     * the ranges it replaced are aligned, and the removed prefixes are looked up in its parsed
     * prefixes. A full build's content carries its prefixes parsed (RevisionFamily.table): the
     * removed prefixes are looked up in them too (at 1.2M, ~10 ms against ~0.4 s parsing `next`'s
     * shorter prefixes from their texts), and a current content that carries them too is aligned
     * by their words (alignContents).
     */
    async guard(
      tx: Db,
      tenantId: string,
      current: RevisionRow | undefined,
      next: RevisionContent,
      maxDropPercent: number,
      force: boolean,
      change?: RevisionBuildChange,
    ) {
      if (!current || force) return;
      const before = await deps.revisions.content(tx, tenantId, current.revision_id);
      const total = current.prefix_count_v4 + current.prefix_count_v6;
      // Only a prefix the next content lacks can be withdrawn: the change's removed ones are
      // checked against it, not every prefix of both (the commit reuses the same walk).
      const withdrawn = before ? withdrawnFrom(before, next, deps.revisions.align(before, next, change), change?.tables ?? tablesOf(next)) : 0;
      if (total > 0 && (withdrawn * 100) / total > maxDropPercent) {
        throw new AppError(
          "revision_guard_tripped",
          `the refresh would withdraw ${withdrawn} of the current revision's ${total} prefixes (more than ${maxDropPercent}%); refresh with "force": true to accept it`,
          { extra: { withdrawn_count: withdrawn, current_count: total, max_drop_percent: maxDropPercent, current_revision_id: current.revision_id } },
        );
      }
    },

    /**
     * Inserts the revision after `current` (the caller holds the lock: lockCurrent), with its
     * content given decoded (kept in memory for the first readers) or as the stored bytes (a
     * rollback's copy). The sections are built in a savepoint: their failure is only reported.
     * `afterCommit` runs the revision.created event once the caller's transaction has committed.
     */
    async commit(
      tx: Db,
      tenantId: string,
      current: RevisionRow | undefined,
      revision: NewRevision & { created_at: Date; content: RevisionContent | Buffer; change?: RevisionBuildChange | undefined },
      afterCommit: (fn: () => void) => void,
    ): Promise<CommittedRevision> {
      const started = Date.now();
      const { content, change, ...fields } = revision;
      const row: RevisionRow = { ...fields, tenant_id: tenantId, revision_id: (current?.revision_id ?? 0) + 1 };
      deps.revisions.forget(tenantId, row.revision_id);
      // Bytes (a whole content, encodeContent's) are stored as given; a decoded content as a
      // change against the current revision where that is smaller (revision-store.ts).
      const { wholeLater, ...stored } = Buffer.isBuffer(content)
        ? { content, wholeLater: undefined }
        : await deps.revisions.storedForm(tx, tenantId, current?.revision_id ?? null, content, change);
      await insertRevision(tx, { ...row, ...stored });
      const written = Date.now();
      let sectionsError: string | null = null;
      let sectionsCommitted: (() => void) | undefined;
      if (deps.sections) {
        const sections = deps.sections;
        const splices = change && current ? { parentId: current.revision_id, v4: change.v4, v6: change.v6 } : undefined;
        sectionsCommitted = await withSavepoint(tx, (sp) => sections.prepareSections(sp, tenantId, row.revision_id, splices)).catch((error: unknown) => {
          sectionsError = error instanceof Error ? error.message : String(error);
          return undefined;
        });
      }
      afterCommit(() => {
        // Kept only once committed: a rolled-back id is taken again by the next revision.
        if (!Buffer.isBuffer(content)) deps.revisions.remember(tenantId, row.revision_id, content);
        publishRevisionCreated(deps.bus, row);
        sectionsCommitted?.();
        if (wholeLater && deps.rewrite && current)
          void deps.revisions.compactLater(deps.rewrite.sql, tenantId, row.revision_id, current.revision_id, deps.rewrite.delayMs);
      });
      return { row, sections_error: sectionsError, write_ms: written - started, sections_ms: Date.now() - written };
    },
  };
}

export type RevisionCommitter = ReturnType<typeof createRevisionCommitter>;
