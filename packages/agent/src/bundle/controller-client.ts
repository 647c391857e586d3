import type { SigningKeyJson, StatusReport } from "@rlc/proto";
import { BundleError, type ReceivedBundle } from "@rlc/shared/bundle";
import { errorFields, type Logger } from "../log.js";
import type { FetchBundleOptions } from "./fetch-options.js";
import type { AgentGrpcClient } from "./grpc-client.js";
import type { ControllerHttpClient, DesiredRevision } from "./http-client.js";

/** What the sync loop and the reporter need from the controller, whatever the transport. */
export interface ControllerClient {
  /** The speaker's desired revision; null when it has none. */
  latest(): Promise<DesiredRevision | null>;
  /**
   * The signed bundle of `revisionId`, as received. With `baseRevisionId` (the revision the
   * agent runs and holds the prefixes of) a delta from it may come instead of the full bundle.
   * `onHead` checks an rl-bundle/2's signed head as soon as it is in; its refusal is final (the
   * other transport would bring the same bundle).
   */
  fetchBundle(revisionId: number, options?: Pick<FetchBundleOptions, "baseRevisionId" | "onHead">): Promise<ReceivedBundle>;
  signingKeys(): Promise<SigningKeyJson[]>;
  reportStatus(report: StatusReport): Promise<void>;
}

export interface ControllerClientOptions {
  http: ControllerHttpClient;
  /** null when no gRPC endpoint is known: HTTP only. */
  grpc: AgentGrpcClient | null;
  speakerId: string;
  maxBundleBytes: number;
  log: Logger;
  /** Called when gRPC failed and HTTP was tried instead (for the metrics). */
  onFallback?: (operation: "fetch_bundle" | "report_status") => void;
}

/** gRPC first (one connection, chunked), the HTTP node routes when it fails. */
export function createControllerClient(o: ControllerClientOptions): ControllerClient {
  async function viaGrpcThenHttp<T>(operation: "fetch_bundle" | "report_status", grpcCall: (() => Promise<T>) | null, httpCall: () => Promise<T>) {
    if (grpcCall) {
      try {
        return await grpcCall();
      } catch (error) {
        if (error instanceof BundleError) throw error;
        o.log.warn("gRPC failed; trying HTTP", { operation, ...errorFields(error) });
        o.onFallback?.(operation);
      }
    }
    return httpCall();
  }
  const grpc = o.grpc;
  return {
    latest: () => o.http.latest(o.speakerId),
    fetchBundle: (revisionId, options = {}) => {
      const fetch = { ...options, maxBytes: o.maxBundleBytes };
      return viaGrpcThenHttp("fetch_bundle", grpc && (() => grpc.fetchBundle(revisionId, fetch)), () => o.http.fetchBundle(o.speakerId, revisionId, fetch));
    },
    signingKeys: () => o.http.signingKeys(),
    reportStatus: (report) => viaGrpcThenHttp("report_status", grpc && (() => grpc.reportStatus(report)), () => o.http.reportStatus(report)),
  };
}
