import type { BundleReceiverOptions } from "@rlc/shared/bundle";

/** How a bundle is fetched, over gRPC (grpc-client.ts) or HTTP (http-client.ts) alike. */
export interface FetchBundleOptions {
  /** Refused (`too_large`) past this many bytes. */
  maxBytes: number;
  /** The whole transfer's deadline. Default 300 s. */
  timeoutMs?: number;
  /** The revision the agent holds the prefixes of: a delta from it may come. */
  baseRevisionId?: number | null;
  /** The signed head of an rl-bundle/2 as soon as it is in; a throw stops the transfer (BundleReceiver). */
  onHead?: BundleReceiverOptions["onHead"];
}
