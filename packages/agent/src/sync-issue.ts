import type { DesiredRevision } from "./bundle/http-client.js";
import type { RefusedIssue } from "./state.js";

// Which issue of a revision a bundle is, to remember a refusal and recognise it when named again.

/**
 * The same issue of a revision: same content and, when both sides say, the same sequence or
 * issue time (a re-issue of an expired bundle keeps revision and digest). When neither can be
 * compared the refusal stands, for as long as the sync loop remembers it.
 */
export function sameIssue(a: DesiredRevision, b: DesiredRevision): boolean {
  if (a.revision_id !== b.revision_id || a.digest !== b.digest) return false;
  if (a.sequence !== null && b.sequence !== null) return a.sequence === b.sequence;
  if (a.issued_at !== null && b.issued_at !== null) return a.issued_at === b.issued_at;
  return true;
}

export function pickIssue(d: DesiredRevision): Pick<RefusedIssue, "revision_id" | "digest" | "sequence" | "issued_at"> {
  return { revision_id: d.revision_id, digest: d.digest, sequence: d.sequence, issued_at: d.issued_at };
}
