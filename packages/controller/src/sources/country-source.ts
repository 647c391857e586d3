// The country source of the COUNTRY collector (`COUNTRY_SOURCE`): `ripestat` asks RIPEstat's
// country resource list (or a mirror at `ASN_SOURCE_URL`, the same base the ASN source uses);
// `delegated:<path-or-URL>[,…]` reads the RIRs' delegated statistics files, one per registry,
// merged. Paths and URLs are separated by commas, so neither can contain one.
import { readFile } from "node:fs/promises";
import { aggregatePrefixes } from "@rlc/shared/prefix";
import { COUNTRY_CODE, type CountryIndex, CountrySourceError, parseDelegated, parseRipestatCountry } from "./country-parse.js";
import type { OutboundClient } from "./outbound.js";

export { CountrySourceError } from "./country-parse.js";

export interface CountrySource {
  /** The fewest CIDRs covering the country's addresses, IPv4 first; [] when it has none. */
  prefixesOf(country: string, options?: { signal?: AbortSignal }): Promise<string[]>;
}

export interface CountrySourceDeps {
  client?: OutboundClient;
  /** `ASN_SOURCE_URL`; default `https://stat.ripe.net`. */
  baseUrl?: string;
  /** How long delegated files are kept before the next use reads them again; default an hour (the RIRs publish daily). */
  reloadAfterMs?: number;
  /** Delegated files fetched by URL are large (ARIN's extended file is ~15 MB); default 256 MiB. */
  maxBytes?: number;
  now?: () => number;
}

/** The source `COUNTRY_SOURCE` names, or null when it is unset. */
export function countrySourceOf(
  config: { COUNTRY_SOURCE?: string | undefined; ASN_SOURCE_URL?: string | undefined },
  client: OutboundClient,
): CountrySource | null {
  if (!config.COUNTRY_SOURCE) return null;
  return createCountrySource(config.COUNTRY_SOURCE, { client, ...(config.ASN_SOURCE_URL ? { baseUrl: config.ASN_SOURCE_URL } : {}) });
}

export function createCountrySource(spec: string, deps: CountrySourceDeps = {}): CountrySource {
  if (spec === "ripestat") {
    const client = deps.client;
    if (!client) throw new CountrySourceError("COUNTRY_SOURCE=ripestat needs an outbound client");
    const base = (deps.baseUrl ?? "https://stat.ripe.net").replace(/\/+$/, "");
    return {
      async prefixesOf(country, options = {}) {
        checkCountry(country);
        const res = await client.request(`${base}/data/country-resource-list/data.json?resource=${country}`, {
          headers: { accept: "application/json" },
          signal: options.signal,
        });
        return aggregatePrefixes(parseRipestatCountry(res.body.toString("utf8"), country));
      },
    };
  }
  if (spec.startsWith("delegated:")) {
    const locations = spec
      .slice("delegated:".length)
      .split(",")
      .map((p) => p.trim());
    if (locations.length === 0 || locations.some((p) => p === "")) throw new CountrySourceError(`COUNTRY_SOURCE ${spec}: empty path or URL`);
    if (locations.some(isUrl) && !deps.client) throw new CountrySourceError("COUNTRY_SOURCE with a URL needs an outbound client");
    return createDelegatedSource(locations, deps);
  }
  throw new CountrySourceError(`COUNTRY_SOURCE must be "ripestat" or "delegated:<path-or-URL>[,…]", not "${spec}"`);
}

const isUrl = (location: string) => /^https?:\/\//i.test(location);

function checkCountry(country: string): void {
  if (!COUNTRY_CODE.test(country)) throw new RangeError(`not an ISO 3166-1 alpha-2 code: ${country}`);
}

function createDelegatedSource(locations: string[], deps: CountrySourceDeps): CountrySource {
  const now = deps.now ?? Date.now;
  const reloadAfterMs = deps.reloadAfterMs ?? 3_600_000;
  // One load serves every country of a refresh; a failed load is forgotten so the next refresh tries again.
  let loaded: { at: number; index: Promise<Map<string, string[]>> } | null = null;
  const load = async (signal: AbortSignal | undefined): Promise<Map<string, string[]>> => {
    const index: CountryIndex = new Map();
    for (const location of locations) {
      const text = isUrl(location)
        ? (await deps.client!.request(location, { signal, maxBytes: deps.maxBytes ?? 256 * 1024 * 1024, timeoutMs: 120_000 })).body.toString("utf8")
        : await readFile(location, "utf8").catch((err: unknown) => {
            throw new CountrySourceError(`cannot read delegated statistics ${location}: ${(err as Error).message}`, { cause: err });
          });
      const stats = parseDelegated(text, index);
      if (stats.records === 0) {
        const hint = stats.firstRejected ? ` (first line not understood: "${stats.firstRejected}")` : "";
        throw new CountrySourceError(`delegated statistics ${location} hold no allocated or assigned address records${hint}`);
      }
    }
    return new Map([...index].map(([cc, prefixes]) => [cc, aggregatePrefixes(prefixes)]));
  };
  return {
    async prefixesOf(country, options = {}) {
      checkCountry(country);
      options.signal?.throwIfAborted();
      if (!loaded || now() - loaded.at > reloadAfterMs) {
        const index = load(options.signal);
        const entry = { at: now(), index };
        loaded = entry;
        index.catch(() => {
          if (loaded === entry) loaded = null;
        });
      }
      return (await loaded.index).get(country) ?? [];
    },
  };
}
