import { type BundlePayload, isBundleV2, readKeptBundleV2, splitBundleV2 } from "@rlc/shared/bundle";

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
