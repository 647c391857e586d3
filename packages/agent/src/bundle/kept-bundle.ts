import { BundleError, type BundlePayload, isBundleV2, type ReceivedBundle, readKeptBundleV2, splitBundleV2 } from "@rlc/shared/bundle";
import type { Logger } from "../log.js";

/** What a fetch needs from the loop: the transport and the check (signature, sequence, delta base). */
export interface FetchDeps {
  fetchBundle(revisionId: number, baseRevisionId: number | null): Promise<ReceivedBundle>;
  log: Logger;
}

/**
 * Fetches the bundle of `revisionId`, asking for a delta from `base` (the revision BIRD runs,
 * when the agent still holds its prefixes), and verifies it. A delta the agent cannot use (its
 * base is not what the agent holds, or the prefixes rebuilt from it are not the revision's) is
 * dropped and the full bundle fetched and verified instead; every other refusal stands, as it
 * would for a full bundle. `onBytes` sees each bundle received, for the refusal report.
 */
export async function fetchVerified<T extends { section?: "full" | "delta" }, B extends { revision_id: number }>(
  deps: FetchDeps,
  revisionId: number,
  base: B | null,
  verify: (received: ReceivedBundle, base: B | null) => Promise<T>,
  onBytes: (bytes: Uint8Array) => void,
): Promise<{ bytes: Uint8Array; verified: T }> {
  const received = await deps.fetchBundle(revisionId, base?.revision_id ?? null);
  onBytes(received.bytes);
  try {
    return { bytes: received.bytes, verified: await verify(received, base) };
  } catch (error) {
    const usable = error instanceof BundleError && (error.code === "delta_base_mismatch" || (error.code === "digest_mismatch" && isDelta(received.bytes)));
    if (!usable) throw error;
    deps.log.warn("sync: the delta bundle does not fit the prefixes held; fetching the full bundle", { revision_id: revisionId, code: error.code });
    const full = await deps.fetchBundle(revisionId, null);
    onBytes(full.bytes);
    return { bytes: full.bytes, verified: await verify(full, null) };
  }
}

function isDelta(bytes: Uint8Array): boolean {
  try {
    return isBundleV2(bytes) && (JSON.parse(Buffer.from(splitBundleV2(bytes).header).toString("utf8")) as { section?: string }).section === "delta";
  } catch {
    return false;
  }
}

/**
 * The payload of a bundle the agent verified before and kept (its own files): rl-bundle/1 JSON,
 * or rl-bundle/2 with its full prefix section kept beside it. Not verified again (it may have
 * expired since); null when it cannot be read.
 */
export function readKeptPayload(bytes: Uint8Array, prefixes: Uint8Array | null): BundlePayload | null {
  if (isBundleV2(bytes)) return prefixes ? readKeptBundleV2(bytes, prefixes) : null;
  const envelope = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8")) as { payload: string };
  return JSON.parse(Buffer.from(envelope.payload, "base64").toString("utf8")) as BundlePayload;
}

/** sequence and issued_at of a bundle, read without verifying; nulls when unreadable. */
export function peekIssue(bytes: Uint8Array): { sequence: number | null; issued_at: string | null } {
  try {
    let payload: Record<string, unknown>;
    if (isBundleV2(bytes)) {
      payload = JSON.parse(Buffer.from(splitBundleV2(bytes).header).toString("utf8")) as Record<string, unknown>;
    } else {
      const envelope = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8")) as { payload?: unknown };
      payload = JSON.parse(Buffer.from(String(envelope.payload), "base64").toString("utf8")) as Record<string, unknown>;
    }
    return {
      sequence: Number.isSafeInteger(payload.sequence) ? (payload.sequence as number) : null,
      issued_at: typeof payload.issued_at === "string" ? payload.issued_at : null,
    };
  } catch {
    return { sequence: null, issued_at: null };
  }
}
