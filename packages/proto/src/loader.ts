import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";
import type {
  BundleChunk,
  EnrollRequest,
  EnrollResponse,
  GetBundleRequest,
  ReportStatusRequest,
  ReportStatusResponse,
  WatchEvent,
  WatchRequest,
} from "./messages.js";

// The single-file agent (scripts/package.mjs) defines this to agent.proto's text: that build has
// no package directory to read the file from, and no `import.meta.url` to find one.
declare const __RL_AGENT_PROTO__: string | undefined;
const EMBEDDED_PROTO = typeof __RL_AGENT_PROTO__ === "string" ? __RL_AGENT_PROTO__ : undefined;

/** agent.proto sits at the package root, one level above both src/ and dist/. */
export const AGENT_PROTO_PATH = EMBEDDED_PROTO === undefined ? fileURLToPath(new URL("../agent.proto", import.meta.url)) : "agent.proto";

/**
 * How both ends load the file, so they agree on the shapes in messages.ts: names as written
 * (snake_case, like the JSON API), uint64 as number (revision ids and sequences stay far below
 * 2^53), enums by name, defaults filled in.
 */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

/** Largest `BundleChunk.data`; grpc-js refuses messages over 4 MiB by default. */
export const BUNDLE_CHUNK_MAX_BYTES = 1024 * 1024;

export const AGENT_SERVICE_NAME = "rl.agent.v1.AgentService";

/** The client as grpc-js builds it from the service definition (methods in camelCase). */
export interface AgentServiceClient extends grpc.Client {
  enroll(request: EnrollRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<EnrollResponse>): grpc.ClientUnaryCall;
  watch(request: WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<WatchEvent>;
  getBundle(request: GetBundleRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<BundleChunk>;
  reportStatus(
    request: ReportStatusRequest,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: grpc.requestCallback<ReportStatusResponse>,
  ): grpc.ClientUnaryCall;
}

export type AgentServiceClientConstructor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => AgentServiceClient;

/** What a server passes to `server.addService(service, handlers)`; keys are the RPC names. */
export interface AgentServiceHandlers extends grpc.UntypedServiceImplementation {
  Enroll: grpc.handleUnaryCall<EnrollRequest, EnrollResponse>;
  Watch: grpc.handleServerStreamingCall<WatchRequest, WatchEvent>;
  GetBundle: grpc.handleServerStreamingCall<GetBundleRequest, BundleChunk>;
  ReportStatus: grpc.handleUnaryCall<ReportStatusRequest, ReportStatusResponse>;
}

export interface AgentServiceDefinition {
  /** For `server.addService`. */
  service: grpc.ServiceDefinition;
  /** For `new Client(address, credentials)`. */
  Client: AgentServiceClientConstructor;
}

/** The package definition from agent.proto's text, as `loadSync` makes it from the file. */
export function packageDefinitionFromText(text: string): protoLoader.PackageDefinition {
  const { root } = protobuf.parse(text, { keepCase: PROTO_LOADER_OPTIONS.keepCase ?? false });
  return protoLoader.fromJSON(root.toJSON(), PROTO_LOADER_OPTIONS);
}

/** agent.proto's definition, loaded once per process. */
let shipped: AgentServiceDefinition | null = null;

/**
 * The service definition of agent.proto. The shipped file's is loaded once and shared: each load
 * makes new message types, and protobufjs generates each type's encoder and decoder again on its
 * first use (a millisecond or so a type), which a process running many agents (the benchmark,
 * tests) would pay once per agent. Another path is read each time.
 */
export function loadAgentService(protoPath: string = AGENT_PROTO_PATH): AgentServiceDefinition {
  if (protoPath !== AGENT_PROTO_PATH) return loadDefinition(protoPath);
  shipped ??= loadDefinition(protoPath);
  return shipped;
}

function loadDefinition(protoPath: string): AgentServiceDefinition {
  const definition =
    EMBEDDED_PROTO !== undefined && protoPath === AGENT_PROTO_PATH
      ? packageDefinitionFromText(EMBEDDED_PROTO)
      : protoLoader.loadSync(protoPath, PROTO_LOADER_OPTIONS);
  const service = definition[AGENT_SERVICE_NAME] as grpc.ServiceDefinition | undefined;
  if (!service) throw new Error(`${protoPath} does not define ${AGENT_SERVICE_NAME}`);
  const Client = grpc.makeClientConstructor(service, AGENT_SERVICE_NAME) as unknown as AgentServiceClientConstructor;
  return { service, Client };
}

/** Metadata `authorization: Bearer <key>`: the node key, or the enrollment token for Enroll. */
export function bearerMetadata(key: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${key}`);
  return metadata;
}

/** The key of `authorization: Bearer <key>`; null when absent or malformed. */
export function bearerFromMetadata(metadata: grpc.Metadata): string | null {
  const value = metadata.get("authorization")[0];
  if (typeof value !== "string") return null;
  const m = /^Bearer ([^\s]+)$/i.exec(value.trim());
  return m ? (m[1] as string) : null;
}
