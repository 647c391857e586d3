// One name, one record type, across the profiles of a module under its DohResolverPolicy:
// CNAME chasing, attempts, and the failover / race / union strategies.
import { type DohProfileSpec, type DohQueryType, queryDoh } from "./doh-client.js";
import { DohCnameChainError, DohRcodeError } from "./doh-errors.js";
import { type OutboundClient, OutboundHttpError, OutboundNetworkError, OutboundTimeoutError } from "./outbound.js";

export interface DohResolverPolicy {
  strategy: "failover" | "race" | "union";
  /** Non-empty subset of A, AAAA. */
  record_types: DohQueryType[];
  /** Per query, 100..30000; the profile's own `timeout_ms` caps it too. */
  timeout_ms: number;
  /** Tries per profile, 1..5; only failures that may pass are tried again. */
  attempts: number;
  /** 0..43200. */
  keep_previous_minutes: number;
}

/** A profile plus, optionally, a label for error messages (its name or id). */
export type LabelledProfile = DohProfileSpec & { name?: string | null; id?: string };

export type LookupResult = { ok: true; addresses: string[] } | { ok: false; error: string };

// RFC 1034 leaves the limit open; resolvers use 8..16 and real CDN chains stay under 5.
export const MAX_CNAME_HOPS = 8;

export async function lookupName(
  client: OutboundClient,
  profiles: readonly LabelledProfile[],
  policy: DohResolverPolicy,
  name: string,
  type: DohQueryType,
  signal?: AbortSignal,
): Promise<LookupResult> {
  if (profiles.length === 0) return { ok: false, error: "no DoH profile configured" };
  const ask = (profile: LabelledProfile, askSignal?: AbortSignal) =>
    withAttempts(client, profile, policy, name, type, askSignal).catch((err: unknown) => {
      throw new ProfileFailure(profile, err);
    });
  const failed = (errors: unknown[]): LookupResult => {
    signal?.throwIfAborted();
    return { ok: false, error: describe(errors) };
  };

  if (policy.strategy === "failover") {
    const errors: unknown[] = [];
    for (const profile of profiles) {
      try {
        return { ok: true, addresses: await ask(profile, signal) };
      } catch (err) {
        errors.push(err);
        signal?.throwIfAborted();
      }
    }
    return failed(errors);
  }

  if (policy.strategy === "race") {
    const losers = new AbortController();
    const raceSignal = signal ? AbortSignal.any([signal, losers.signal]) : losers.signal;
    try {
      return { ok: true, addresses: await Promise.any(profiles.map((p) => ask(p, raceSignal))) };
    } catch (err) {
      return failed(err instanceof AggregateError ? err.errors : [err]);
    } finally {
      losers.abort();
    }
  }

  const settled = await Promise.allSettled(profiles.map((p) => ask(p, signal)));
  const union = new Set<string>();
  const errors: unknown[] = [];
  for (const result of settled) {
    if (result.status === "fulfilled") for (const a of result.value) union.add(a);
    else errors.push(result.reason);
  }
  return errors.length === profiles.length ? failed(errors) : { ok: true, addresses: [...union] };
}

class ProfileFailure extends Error {
  constructor(
    readonly profile: LabelledProfile,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

async function withAttempts(
  client: OutboundClient,
  profile: LabelledProfile,
  policy: DohResolverPolicy,
  name: string,
  type: DohQueryType,
  signal?: AbortSignal,
): Promise<string[]> {
  const timeoutMs = Math.min(policy.timeout_ms, profile.timeout_ms > 0 ? profile.timeout_ms : Number.POSITIVE_INFINITY);
  for (let attempt = 1; ; attempt++) {
    try {
      return await chase(client, profile, name, type, timeoutMs, signal);
    } catch (err) {
      if (attempt >= policy.attempts || signal?.aborted || !mayPassNextTime(err)) throw err;
    }
  }
}

/** Addresses of `type` at the end of the CNAME chain that starts at `name`. */
async function chase(
  client: OutboundClient,
  profile: LabelledProfile,
  name: string,
  type: DohQueryType,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<string[]> {
  const visited = new Set([name]);
  let hops = 0;
  for (let asked = name; ; ) {
    const response = await queryDoh(client, profile, asked, type, { timeoutMs, signal });
    if (response.rcode !== "NOERROR") throw new DohRcodeError(response.rcode, asked);
    let target = asked;
    for (;;) {
      const cname = response.answers.find((a) => a.type === "CNAME" && a.name === target);
      if (!cname) break;
      if (visited.has(cname.data)) throw new DohCnameChainError(`CNAME loop at ${cname.data} (from ${name})`);
      if (++hops > MAX_CNAME_HOPS) throw new DohCnameChainError(`CNAME chain from ${name} is longer than ${MAX_CNAME_HOPS}`);
      visited.add(cname.data);
      target = cname.data;
    }
    const addresses = response.answers.filter((a) => a.type === type && a.name === target).map((a) => a.data);
    // A server that answers only the alias (the target lives elsewhere) leaves the rest to us.
    if (addresses.length > 0 || target === asked) return addresses;
    asked = target;
  }
}

function mayPassNextTime(err: unknown): boolean {
  if (err instanceof OutboundTimeoutError || err instanceof OutboundNetworkError) return true;
  if (err instanceof OutboundHttpError) return err.status >= 500 || err.status === 429;
  if (err instanceof DohRcodeError) return err.rcode === "SERVFAIL";
  return false;
}

function describe(errors: readonly unknown[]): string {
  const parts = errors.map((err) => {
    if (!(err instanceof ProfileFailure)) return err instanceof Error ? err.message : String(err);
    const { profile, cause } = err;
    const label = profile.name || profile.id || hostOf(profile.url);
    const code = (cause as { code?: unknown } | null | undefined)?.code;
    return typeof code === "string" ? `${label}: ${err.message} (${code})` : `${label}: ${err.message}`;
  });
  return [...new Set(parts)].join("; ");
}

/** Host only: a DoH URL's path may carry an account token (NextDNS, ControlD). */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "invalid URL";
  }
}
