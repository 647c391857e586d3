import type { StatusReportEvent } from "@rlc/proto";
import { type AgentAnnouncement, BUNDLE_FORMATS } from "@rlc/shared/bundle";
import { AppError, ForbiddenError, NotFoundError, UnauthenticatedError, ValidationError } from "@rlc/shared/errors";
import type { Bus } from "../../bus/index.js";
import { revokeApiKeysBySpeaker } from "../../db/api-keys.js";
import { readBundleSectionSlice } from "../../db/bundle-sections.js";
import { type BundleLayout, findBundleLayout, findBundleMeta, readBundleSlice } from "../../db/bundles.js";
import type { Db, Sql } from "../../db/connect.js";
import { spendEnrollmentToken } from "../../db/enrollment.js";
import { findSpeakerById, markSpeakerEnrolled, recordAgentAccepts, recordSpeakerReports, type SpeakerReportWrite, type SpeakerRow } from "../../db/speakers.js";
import { publishEvent } from "../../events/publish.js";
import { sessionChanges } from "../../events/session-changes.js";
import { createBatcher } from "../../lib/batcher.js";
import { openPieces, sealedRange } from "../../lib/sealed-envelope.js";
import type { SecretBox } from "../../lib/secret-box.js";
import { isoRequired } from "../../lib/time.js";
import { createBuckets } from "../../lib/token-buckets.js";
import { mintApiKey } from "../access/api-keys.js";
import type { AuditWriter } from "../access/audit.js";
import type { Principal } from "../access/context.js";
import type { NatsCredentialService } from "../access/nats-credentials.js";
import { openSection, type SectionDeps } from "./bundle-sections.js";
import { sectionKey } from "./section-cache.js";
import { digestKnownBy, mayDelta, readerV1FromV2, type ServedFormats, servedFormat } from "./served-format.js";
import type { SessionHistory } from "./session-history.js";
import type { SigningService } from "./signing.js";
import { hashToken } from "./speakers.js";

export interface StatusReportBody {
  speaker_id: string;
  reason: "applied" | "apply_failed" | "live_poll" | "sessions_changed" | "started";
  poll_id?: string | null | undefined;
  applied_revision_id?: number | null | undefined;
  applied_sequence?: number | null | undefined;
  applied_at?: string | null | undefined;
  error?: { code: string; message: string; revision_id?: number | null | undefined; [k: string]: unknown } | null | undefined;
  agent_version?: string | null | undefined;
  [k: string]: unknown;
}

/** RFC 3339 date-time, as the agent writes it (`toISOString`); anything else is refused before SQL sees it. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/i;

function assertReportTimes(body: StatusReportBody): void {
  for (const [field, value] of [
    ["applied_at", body.applied_at],
    ["error.at", body.error?.at],
  ] as const) {
    if (value === null || value === undefined || value === "") continue;
    if (typeof value !== "string" || !RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
      throw new ValidationError(`invalid report: ${field} must be an RFC 3339 date-time`);
    }
  }
}

/** Reports written by one statement at most: a report is up to 64 KiB. */
const REPORTS_PER_STATEMENT = 100;

/**
 * Status reports one speaker may send: a burst of 20, then one every 500 ms. An agent reports on
 * start, per apply, when a session changes and per live poll (at most one a second), far below.
 */
export const STATUS_REPORT_RATE = { burst: 20, everyMs: 500 };

/** The event of a report: the fields the controller knows, never whatever else a body carried. */
function statusEvent(body: StatusReportBody, tenantId: string, speakerId: string, now: Date): StatusReportEvent {
  const known = [
    "reason",
    "poll_id",
    "applied_revision_id",
    "applied_sequence",
    "applied_digest",
    "applied_at",
    "error",
    "bird",
    "sessions",
    "agent_version",
    "reported_at",
  ] as const;
  const event: Record<string, unknown> = { tenant_id: tenantId, speaker_id: speakerId, received_at: now.toISOString() };
  for (const k of known) if (body[k] !== undefined) event[k] = body[k];
  return event as StatusReportEvent;
}

type Gone = () => NotFoundError;

/** An rl-bundle/2 as the signed head, then the section named by its {@link sectionKey}. */
export interface BundleParts {
  head: Buffer;
  section: { key: string; size: number };
}

/**
 * Format 2: the head (opened once, a few KiB) and then the revision's section, shared by every
 * speaker and opened once for all of them (the cache).
 */
async function readerV2Of(box: SecretBox, db: Db, tenantId: string, revisionId: number, layout: BundleLayout, gone: Gone, sections: SectionDeps) {
  const head = await openPieces(box, layout.head!, layout.chunk!);
  if (layout.section_sha256 === null) throw gone();
  const section = {
    revision_id: revisionId,
    base_revision_id: layout.section_base_revision_id,
    sha256: layout.section_sha256,
    size: layout.section_size!,
    chunk: layout.section_chunk!,
    made_from: layout.section_made_from,
    made_depth: layout.section_made_depth ?? 0,
  };
  /** `length` plain bytes of the section from `at`: only the sealed pieces that cover them are read and opened. */
  const readSlice = async (at: number, length: number) => {
    const range = sealedRange(section.chunk, at, Math.min(length, section.size - at));
    if (range.length === 0) return Buffer.alloc(0);
    const sealed = await readBundleSectionSlice(db, tenantId, revisionId, section.base_revision_id, range.from, range.length);
    if (!sealed) throw gone();
    const plain = await openPieces(box, sealed, section.chunk);
    return plain.subarray(range.skip, range.skip + Math.min(length, section.size - at));
  };
  // Too large to keep (a stream then holds about one chunk of it, not all of it), unless its body
  // is not written yet: then it is made whole from its base's (bundle-sections.ts).
  const key = sectionKey(tenantId, section);
  const cache = sections.sections;
  const whole =
    section.made_from !== null
      ? await openSection(db, sections, tenantId, section)
      : cache?.keeps(section.size)
        ? await cache.get(key, section.size, () => readSlice(0, section.size))
        : null;
  return {
    revision_id: revisionId,
    sequence: layout.sequence,
    size: head.length + section.size,
    /** Not given for format 2: the signed header names the SHA-256 of each part. */
    sha256: null as string | null,
    delta: layout.section_base_revision_id !== 0,
    /**
     * The head (this speaker's) and the section (the revision's, the same for every speaker),
     * for a transport that treats them apart: the HTTP route compresses a section once for all.
     */
    parts: { head, section: { key, size: section.size } } as BundleParts | null,
    async read(offset: number, length: number): Promise<Buffer> {
      if (offset < head.length) return head.subarray(offset, Math.min(head.length, offset + length));
      const at = offset - head.length;
      return whole ? whole.subarray(at, Math.min(section.size, at + length)) : readSlice(at, length);
    },
  };
}

/** Format 1: the whole signed envelope, read only while it is still the issue the layout named. */
function readerV1Of(box: SecretBox, db: Db, speakerId: string, revisionId: number, layout: BundleLayout, gone: Gone) {
  return {
    revision_id: revisionId,
    sequence: layout.sequence,
    size: layout.size,
    sha256: layout.sha256,
    delta: false,
    parts: null as BundleParts | null,
    async read(offset: number, length: number): Promise<Buffer> {
      if (layout.chunk === null) {
        const data = await readBundleSlice(db, speakerId, revisionId, layout.sequence, offset, length);
        if (!data) throw gone();
        return data;
      }
      // Only the sealed pieces that cover the slice are read and opened.
      const range = sealedRange(layout.chunk, offset, length);
      const sealed = await readBundleSlice(db, speakerId, revisionId, layout.sequence, range.from, range.length);
      if (!sealed) throw gone();
      const plain = await openPieces(box, sealed, layout.chunk);
      return plain.subarray(range.skip, range.skip + length);
    },
  };
}

export type BundleReader = ReturnType<typeof readerV1Of>;

/** The node side: enrollment, the desired revision, bundles, status reports. */
export function createNodeService(deps: {
  sql: Sql;
  bus: Bus;
  audit: AuditWriter;
  signing: SigningService;
  /** Opens stored bundles (they are sealed at rest: their peers' passwords are in them). */
  secretBox: SecretBox;
  grpcEndpoint: string | null;
  natsUrl: string | null;
  natsCredentials?: NatsCredentialService;
  /** Where the session changes a report shows are kept for the API (the events below are not a query). */
  sessionHistory?: SessionHistory;
  onKeysChanged?: () => void;
  /** How the prefix sections are opened and kept in this process (shared with deploy). */
  sections: SectionDeps;
  /** The bundle formats served (default: every one, newest first) and the count of each served. */
  served?: ServedFormats;
}) {
  const served: ServedFormats = deps.served ?? { formats: BUNDLE_FORMATS };
  const sections = deps.sections;
  // Per process: a replica counts what reaches it (an agent reports to one replica at a time).
  const reports = createBuckets(STATUS_REPORT_RATE);
  // The reports that come together (an apply's, from every speaker within a second or two) are
  // written together: one statement for those of a turn, or of the time the last one took.
  const reportWrites = createBatcher<SpeakerReportWrite, Awaited<ReturnType<typeof recordSpeakerReports>>[number]>({
    run: (batch) => recordSpeakerReports(deps.sql, batch),
    keyOf: (r) => r.speaker_id,
    max: REPORTS_PER_STATEMENT,
  });
  /** A node key reaches only its own speaker (404 otherwise); operators reach any of the tenant's. */
  const speakerFor = async (db: Db, principal: Principal, speakerId: string): Promise<SpeakerRow> => {
    if (principal.role === "node" && principal.speakerId !== speakerId) throw new NotFoundError("speaker", speakerId);
    const row = await findSpeakerById(db, principal.tenantId, speakerId);
    if (!row) throw new NotFoundError("speaker", speakerId);
    return row;
  };

  const readerV2 = (db: Db, tenantId: string, revisionId: number, layout: BundleLayout, gone: Gone) =>
    readerV2Of(deps.secretBox, db, tenantId, revisionId, layout, gone, sections);
  const readerV1 = async (db: Db, speakerId: string, revisionId: number, layout: BundleLayout, gone: Gone) =>
    readerV1Of(deps.secretBox, db, speakerId, revisionId, layout, gone);

  return {
    /** The speaker a key reaches (see `speakerFor` above), read on `db` (default: the service's pool). */
    speakerFor: (principal: Principal, speakerId: string, db: Db = deps.sql) => speakerFor(db, principal, speakerId),

    /** Spends an enrollment token; `accepts` is what the agent announced (null: nothing). */
    async enroll(authorization: string | undefined, body: { hostname: string; agent_version: string }, now: Date, accepts: AgentAnnouncement | null = null) {
      const token = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
      if (!token) throw new UnauthenticatedError("the enrollment token goes in Authorization: Bearer");
      const result = await deps.sql.begin(async (tx) => {
        const spent = await spendEnrollmentToken(tx, hashToken(token), now);
        if (!spent) throw new UnauthenticatedError("unknown, used or expired enrollment token");
        const speaker = await findSpeakerById(tx, spent.tenant_id, spent.speaker_id);
        if (!speaker) throw new UnauthenticatedError("unknown, used or expired enrollment token");
        // A router enrolled again (reinstalled, or a token stolen and spent) has one identity:
        // the node keys of earlier enrollments stop working with this commit.
        const revoked = await revokeApiKeysBySpeaker(tx, speaker.tenant_id, speaker.id, now);
        const key = await mintApiKey(tx, { tenantId: speaker.tenant_id, name: `node ${speaker.name}`, role: "node", now, speakerId: speaker.id });
        // Only this speaker's subjects: another router's credentials can neither read nor forge them.
        const nats = deps.natsUrl && deps.natsCredentials ? await deps.natsCredentials.forAgent(speaker.tenant_id, speaker.id) : null;
        await markSpeakerEnrolled(tx, speaker.id, { hostname: body.hostname, agent_version: body.agent_version, at: now, accepts });
        await deps.audit.recordSystem(tx, speaker.tenant_id, now, {
          actor: "enrollment",
          action: "update",
          resource_type: "speaker",
          resource_id: speaker.id,
          summary: `speaker ${speaker.name} enrolled from ${body.hostname} (agent ${body.agent_version}); node key ${key.row.key_prefix}${revoked ? `; ${revoked} earlier node key(s) revoked` : ""}${nats ? `; NATS user ${nats.user}` : ""}`,
          changes: { enrolled_at: { from: speaker.enrolled_at?.toISOString() ?? null, to: now.toISOString() } },
        });
        return { speaker, secret: key.secret, revoked, natsCreds: nats?.creds ?? null };
      });
      if (result.revoked) deps.onKeysChanged?.();
      return {
        speaker_id: result.speaker.id,
        tenant_id: result.speaker.tenant_id,
        api_key: result.secret,
        signing_keys: (await deps.signing.list(result.speaker.tenant_id)).keys,
        grpc_endpoint: deps.grpcEndpoint,
        nats_url: deps.natsUrl,
        nats_credentials: result.natsCreds,
      };
    },

    /** The speaker's desired revision and its bundle's digest, as its agent knows the bundle (see digestKnownBy). */
    async latest(principal: Principal, speakerId: string, db: Db = deps.sql) {
      const speaker = await speakerFor(db, principal, speakerId);
      if (speaker.desired_revision_id === null) throw new NotFoundError("desired revision of speaker", speakerId);
      // Metadata only: agents ask this on every poll and Watch open; the body can be tens of MiB.
      const bundle = await findBundleMeta(db, speakerId, speaker.desired_revision_id);
      if (!bundle) throw new NotFoundError("bundle of speaker", speakerId);
      return {
        speaker_id: speakerId,
        revision_id: bundle.revision_id,
        digest: principal.role === "node" ? digestKnownBy(speaker, bundle) : bundle.digest,
        sequence: Number(bundle.sequence),
        issued_at: isoRequired(bundle.issued_at),
        bundle_url: `/v1/speakers/${speakerId}/bundle/${bundle.revision_id}`,
      };
    },

    /**
     * Reads a bundle in slices (gRPC GetBundle, the HTTP route): how it is stored is looked up once here, then
     * each slice is one read of the pieces that cover it. Another tenant's speaker is a 404
     * first, as on every route; an operator of the speaker's own tenant gets 403.
     */
    async bundleReader(
      db: Db,
      principal: Principal,
      speakerId: string,
      revisionId: number,
      baseRevisionId: number | null = null,
      accepts: AgentAnnouncement | null = null,
    ): Promise<BundleReader> {
      if (principal.role !== "node") {
        await speakerFor(db, principal, speakerId);
        throw new ForbiddenError("a bundle carries the peers' passwords: only the speaker's node key receives it (see the revision preview)");
      }
      // A node key reaches only its own speaker; the bundle row, read within the key's tenant,
      // answers for the speaker too (a speaker's bundles go with it): one query a fetch.
      if (principal.speakerId !== speakerId) throw new NotFoundError("speaker", speakerId);
      const gone = () => new NotFoundError(`bundle of revision ${revisionId} for speaker`, speakerId);
      // The newest format the agent announced; a delta only to an agent that announced it.
      const format = servedFormat(served, accepts);
      const layout = await findBundleLayout(db, principal.tenantId, speakerId, revisionId, mayDelta(format, accepts) ? baseRevisionId : null);
      if (!layout) throw gone();
      if (layout.format !== 2) {
        served.onServed?.("rl-bundle/1");
        return readerV1(db, speakerId, revisionId, layout, gone);
      }
      const v2 = await readerV2(db, principal.tenantId, revisionId, layout, gone);
      served.onServed?.(format);
      return format === "rl-bundle/2" ? v2 : readerV1FromV2(db, deps.signing, principal.tenantId, v2, v2.parts!.head.length, accepts);
    },
    /** Records what the agent announced as it opened its Watch stream (null: nothing, an older agent). */
    async announced(db: Db, principal: Principal, speakerId: string, accepts: AgentAnnouncement | null) {
      if (principal.role !== "node" || principal.speakerId !== speakerId) throw new NotFoundError("speaker", speakerId);
      await recordAgentAccepts(db, principal.tenantId, speakerId, accepts);
    },
    /** Records what the agent runs and sees, then relays it to every replica (live polls, apply jobs). */
    async report(principal: Principal, speakerId: string, body: StatusReportBody, now: Date, accepts: AgentAnnouncement | null = null) {
      if (principal.role === "node" && principal.speakerId !== speakerId) throw new NotFoundError("speaker", speakerId);
      if (!reports.take(speakerId, now.getTime())) {
        throw new AppError("rate_limited", "too many status reports for this speaker; at most 2 a second after a burst of 20", {
          headers: { "retry-after": "1" },
        });
      }
      assertReportTimes(body);
      const applied = body.applied_revision_id ?? null;
      // The row decides the dispatch status against its own desired revision and sequence.
      const before = await reportWrites.add({
        tenant_id: principal.tenantId,
        speaker_id: speakerId,
        at: now,
        agent_version: body.agent_version ?? null,
        accepts,
        applied_revision_id: applied,
        applied_sequence: body.applied_sequence ?? null,
        applied_at: body.applied_at ?? null,
        error: body.error ?? null,
        report: body as Record<string, unknown>,
        failed_revision_id: body.reason === "apply_failed" ? (body.error?.revision_id ?? null) : null,
      });
      if (!before) throw new NotFoundError("speaker", speakerId);
      // Recorded (committed) first; the sessions compared with the report this one replaces. The
      // changes are kept before they are published, so whoever the event wakes finds them in the history.
      const changes = sessionChanges(before.tenant_id, speakerId, before.last_report, body, now);
      await deps.sessionHistory?.record(changes);
      publishEvent(deps.bus, "status", statusEvent(body, before.tenant_id, speakerId, now));
      for (const change of changes) publishEvent(deps.bus, "session", change);
    },
  };
}

export type NodeService = ReturnType<typeof createNodeService>;
