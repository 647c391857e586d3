import { createClient, type RlClient, unwrap } from "@rlc/client";

/** The typed /v1 client rlctl uses too; every call carries the signed-in key as a Bearer token. */
export type Api = RlClient;

export function connect(apiKey: string): Api {
  return createClient({ baseUrl: window.location.origin, apiKey });
}

/** The data of a 2xx answer; anything else throws the client's ApiError (problem code and detail). */
export const ok = unwrap;
export { ApiError, type FetchResult, type Schema } from "@rlc/client";
