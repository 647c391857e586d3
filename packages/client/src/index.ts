// The controller's /v1 API, typed from its OpenAPI document. No Node imports: this module runs
// in Node 20 (global fetch) and in browsers alike.
import createFetchClient, { type Client } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export { ApiError, type FetchResult, type Problem, unwrap } from "./errors.js";
export type { components, operations, paths };

/** A schema of the document by name: `Schema<"Module">`. */
export type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];

/** The typed client: `client.GET("/v1/modules")`, `client.POST("/v1/modules", { body })`, … */
export type RlClient = Client<paths>;

export interface ClientOptions {
  /** The controller's base URL, e.g. `http://127.0.0.1:3000` (no `/v1`: paths carry it). */
  baseUrl: string;
  /** An API key (`rlk_<prefix>_<secret>`), sent as `Authorization: Bearer`; none for public routes. */
  apiKey?: string;
  /** A fetch of your own (tests, proxies, a browser's with credentials); the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Headers sent with every request (`x-request-id`, …). */
  headers?: Record<string, string>;
}

export function createClient(opts: ClientOptions): RlClient {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  return createFetchClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ""),
    headers,
    // Looked up at call time, not bound at creation, so a test's stand-in for the global fetch is seen.
    fetch: opts.fetch ?? ((input: Request) => globalThis.fetch(input)),
  });
}
