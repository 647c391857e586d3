import { createHash } from "node:crypto";
import {
  type AgentAnnouncement,
  ANNOUNCEMENT_HEADERS,
  announcementOf,
  BUNDLE_FORMATS,
  type BundleFormatName,
  bundleFormatFor,
  bundleV1FromV2,
  hasCapability,
} from "@rlc/shared/bundle";
import { AppError } from "@rlc/shared/errors";
import type { Db } from "../../db/connect.js";
import type { SpeakerRow } from "../../db/speakers.js";
import type { SigningService } from "./signing.js";

/**
 * Which bundle format each agent is served, and the `rl-bundle/1` written for an agent that
 * accepts nothing newer: an agent gets the newest format both this controller writes
 * (`BUNDLE_FORMATS`, newest first) and it announced, `rl-bundle/1` when it announced nothing,
 * and never a feature it did not announce (a delta, `force_confirm`).
 */
export interface ServedFormats {
  /** The formats this controller writes, newest first (`BUNDLE_FORMATS` setting). */
  formats: readonly BundleFormatName[];
  /** Counts each bundle served, by format (the metric `rlc_bundles_served_total`). */
  onServed?: (format: BundleFormatName) => void;
}

/** The format an agent that announced `accepts` is served; a 409 when it accepts none this controller writes. */
export function servedFormat(served: ServedFormats, accepts: AgentAnnouncement | null): BundleFormatName {
  const format = bundleFormatFor(accepts, served.formats);
  if (!format) {
    throw new AppError(
      "conflict",
      `the agent accepts ${accepts?.bundle_formats.join(", ")}, and this controller writes ${served.formats.join(", ")}: upgrade the agent`,
    );
  }
  return format;
}

/** Whether the agent may be sent a delta (rl-bundle/2 and the `delta` capability). */
export const mayDelta = (format: BundleFormatName, accepts: AgentAnnouncement | null) => format === BUNDLE_FORMATS[0] && hasCapability(accepts, "delta");

/** What a bundle reader offers; the same shape for every format. */
export interface PlainReader {
  revision_id: number;
  sequence: string;
  size: number;
  sha256: string | null;
  delta: boolean;
  parts: null;
  read(offset: number, length: number): Promise<Buffer>;
}

/**
 * The `rl-bundle/1` of a full `rl-bundle/2` (read whole from `v2`: its head is `headLength`
 * bytes), signed with the tenant's active key. Built per transfer: only agents of the release
 * before ask for it, each once per bundle.
 */
export async function readerV1FromV2(
  db: Db,
  signing: SigningService,
  tenantId: string,
  v2: { revision_id: number; sequence: string; size: number; read(offset: number, length: number): Promise<Buffer> },
  headLength: number,
  accepts: AgentAnnouncement | null,
): Promise<PlainReader> {
  const pieces: Buffer[] = [];
  for (let at = 0; at < v2.size; ) {
    const data = await v2.read(at, v2.size - at);
    if (data.length === 0) break;
    pieces.push(data);
    at += data.length;
  }
  const whole = Buffer.concat(pieces);
  const key = await signing.activeKey(db, tenantId);
  const { bytes } = await bundleV1FromV2(whole.subarray(0, headLength), whole.subarray(headLength), key, {
    forceConfirm: hasCapability(accepts, "force_confirm"),
  });
  return {
    revision_id: v2.revision_id,
    sequence: v2.sequence,
    size: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    delta: false,
    parts: null,
    async read(offset: number, length: number) {
      return bytes.subarray(offset, offset + length);
    },
  };
}

/**
 * The digest an agent knows the bundle it runs by: the one it reported while it runs this very
 * bundle (revision and sequence). An agent served `rl-bundle/1` knows a bundle by the
 * `rl-bundle/1` digest, and an agent upgraded since keeps it: told that digest, a restarted or
 * upgraded agent finds itself up to date instead of fetching the bundle it runs again.
 */
export function digestKnownBy(speaker: Pick<SpeakerRow, "last_report">, bundle: { revision_id: number; sequence: string | number; digest: string }): string {
  const r = speaker.last_report as { applied_revision_id?: unknown; applied_sequence?: unknown; applied_digest?: unknown } | null;
  const same = r && r.applied_revision_id === bundle.revision_id && Number(r.applied_sequence) === Number(bundle.sequence);
  return same && typeof r.applied_digest === "string" && r.applied_digest ? r.applied_digest : bundle.digest;
}

/** What an HTTP request's headers say the agent accepts (`rl-bundle-formats`, `rl-agent-capabilities`); null: nothing. */
export function announcedInHeaders(headers: Record<string, string | string[] | undefined>): AgentAnnouncement | null {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(",") : v);
  return announcementOf(one(headers[ANNOUNCEMENT_HEADERS.bundleFormats]), one(headers[ANNOUNCEMENT_HEADERS.capabilities]));
}

/** What the node routes' descriptions say of the announcement headers. */
export const ANNOUNCEMENT_HEADERS_TEXT =
  "An agent says what it accepts in the request headers `rl-bundle-formats` (bundle formats, newest first: `rl-bundle/2, rl-bundle/1`) and " +
  "`rl-agent-capabilities` (`delta, force_confirm`); a request without them is from an agent of the release before, which is served `rl-bundle/1` and no feature.";
