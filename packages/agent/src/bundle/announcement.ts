import { type AgentAnnouncement, BUNDLE_FORMAT_V2, BundleError, type BundleReceiverOptions, hasCapability } from "@rlc/shared/bundle";

/**
 * What this agent announces it accepts, on every call to the controller (Enroll, Watch,
 * GetBundle and ReportStatus fields over gRPC; the `rl-bundle-formats` and
 * `rl-agent-capabilities` headers over HTTP); null with `RL_BUNDLE_FORMATS=rl-bundle/1`, which
 * makes the agent the one of the release before announcements: it announces nothing and reads
 * `rl-bundle/1` only.
 */
export type Announcement = AgentAnnouncement | null;

/** The head check a bundle's transfer runs: an `rl-bundle/2` refused at its head when the agent does not accept it. */
export function headCheckFor(announced: Announcement, onHead: BundleReceiverOptions["onHead"]): BundleReceiverOptions["onHead"] {
  if (announced?.bundle_formats.includes(BUNDLE_FORMAT_V2)) return onHead;
  return () => {
    throw new BundleError(
      "unsupported_format",
      `an ${BUNDLE_FORMAT_V2} came, and this agent accepts ${announced?.bundle_formats.join(", ") ?? "rl-bundle/1"} only`,
    );
  };
}

/** The base revision a delta may be asked from: none when the agent did not announce deltas. */
export const deltaBase = (announced: Announcement, baseRevisionId: number | null | undefined) =>
  hasCapability(announced, "delta") ? (baseRevisionId ?? null) : null;
