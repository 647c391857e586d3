// The DOMAINS collector: every domain entry of a module resolved through the module's DoH
// profiles, merged with what earlier refreshes saw.
//
// - `include_subdomains` entries are resolved as their own name only: DNS offers no way to list
//   the names under a wildcard, so only the apex's addresses can be collected.
// - Each record type is resolved on its own. A type whose every profile failed keeps that
//   family's previous records whole (a failing source keeps its last good records); a type
//   that resolved replaces them, except that addresses seen within `keep_previous_minutes`
//   stay (CDN answers rotate; a route must not flap with each refresh).
// - NXDOMAIN counts as a failure, not as "no addresses": filtering resolvers answer it for names
//   they block, so failover asks the next profile, and a name that vanished for one refresh does
//   not withdraw its routes. The warning tells the operator to remove the entry.
// - Private, loopback, link-local, CGNAT, multicast, reserved, documentation and other special
//   answers are dropped with the outbound policy's own table (without any allow-list): an
//   address we would refuse to connect to is not one to route to a module's next hop either.
import { type Family, formatIpValue, parseIpValue } from "@rlc/shared/prefix";
import { normaliseName } from "./doh-client.js";
import { type DohResolverPolicy, type LabelledProfile, lookupName } from "./doh-lookup.js";
import type { OutboundClient } from "./outbound.js";
import { createAddressPolicy } from "./outbound-policy.js";

export type { DohResolverPolicy, LabelledProfile } from "./doh-lookup.js";
export { MAX_CNAME_HOPS } from "./doh-lookup.js";

export interface DomainEntrySpec {
  name: string;
  include_subdomains: boolean;
}

export interface DomainRecord {
  /** Lower case, no trailing dot. */
  domain: string;
  /** A bare address in canonical text (no prefix length). */
  address: string;
  last_seen_at: Date;
}

export interface DomainOutcome {
  domain: string;
  /** Every record type resolved (possibly to nothing). */
  ok: boolean;
  /** Per failed type, `A: <profile>: <reason>; ...`. */
  error?: string;
  /** Addresses resolved now, after dropping special-purpose ones; sorted. */
  addresses: string[];
  /** Answers dropped as private, documentation, etc. */
  dropped: string[];
}

export interface ResolveDomainsDeps {
  client: OutboundClient;
  /** Domains resolved at once. Default 16. */
  concurrency?: number;
}

export interface ResolveDomainsInput {
  domains: readonly DomainEntrySpec[];
  profiles: readonly LabelledProfile[];
  policy: DohResolverPolicy;
  previous: readonly DomainRecord[];
  now: Date;
  /** Cancels the whole collection (a cancelled job); its reason is thrown. */
  signal?: AbortSignal;
}

export interface ResolveDomainsResult {
  /** Ordered as the domains, then by address. */
  records: DomainRecord[];
  perDomain: DomainOutcome[];
}

const SPECIAL = createAddressPolicy([]);
const FAMILY: Record<"A" | "AAAA", Family> = { A: 4, AAAA: 6 };

export async function resolveDomains(deps: ResolveDomainsDeps, input: ResolveDomainsInput): Promise<ResolveDomainsResult> {
  const names = [...new Set(input.domains.map((d) => normaliseName(d.name)))];
  const previous = previousByDomain(input.previous);
  const results = new Array<{ records: DomainRecord[]; outcome: DomainOutcome }>(names.length);

  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const index = next++;
      const domain = names[index]!;
      results[index] = await resolveOne(deps.client, input, domain, previous.get(domain) ?? new Map());
    }
  };
  const width = Math.max(1, Math.min(deps.concurrency ?? 16, names.length));
  await Promise.all(Array.from({ length: width }, worker));
  input.signal?.throwIfAborted();

  return { records: results.flatMap((r) => r.records), perDomain: results.map((r) => r.outcome) };
}

async function resolveOne(
  client: OutboundClient,
  input: ResolveDomainsInput,
  domain: string,
  previous: Map<string, PreviousAddress>,
): Promise<{ records: DomainRecord[]; outcome: DomainOutcome }> {
  const { policy, now } = input;
  const keepSince = now.getTime() - policy.keep_previous_minutes * 60_000;
  const types = [...new Set(policy.record_types)];
  const lookups = await Promise.all(types.map((t) => lookupName(client, input.profiles, policy, domain, t, input.signal)));

  const fresh: string[] = [];
  const dropped: string[] = [];
  const errors: string[] = [];
  const kept: DomainRecord[] = [];
  types.forEach((type, i) => {
    const lookup = lookups[i]!;
    const family = FAMILY[type];
    const seen = new Set<string>();
    if (lookup.ok) {
      for (const address of lookup.addresses) {
        if (SPECIAL.refusal(address) === null) seen.add(address);
        else dropped.push(address);
      }
      fresh.push(...seen);
    } else {
      errors.push(`${type}: ${lookup.error}`);
    }
    for (const old of previous.values()) {
      if (old.family !== family || seen.has(old.address)) continue;
      if (!lookup.ok || old.lastSeen.getTime() >= keepSince) {
        kept.push({ domain, address: old.address, last_seen_at: old.lastSeen });
      }
    }
  });

  const records = [...fresh.map((address) => ({ domain, address, last_seen_at: now })), ...kept];
  records.sort((a, b) => compareAddresses(a.address, b.address));
  const outcome: DomainOutcome = {
    domain,
    ok: errors.length === 0,
    addresses: sortAddresses(fresh),
    dropped: sortAddresses([...new Set(dropped)]),
  };
  if (errors.length > 0) outcome.error = errors.join("; ");
  return { records, outcome };
}

interface PreviousAddress {
  address: string;
  family: Family;
  value: bigint;
  lastSeen: Date;
}

/** Previous records by domain and canonical address; the latest sighting wins on duplicates. */
function previousByDomain(records: readonly DomainRecord[]): Map<string, Map<string, PreviousAddress>> {
  const byDomain = new Map<string, Map<string, PreviousAddress>>();
  for (const record of records) {
    const parsed = parseIpValue(record.address);
    if (!parsed) continue;
    const address = formatIpValue(parsed);
    const domain = normaliseName(record.domain);
    let addresses = byDomain.get(domain);
    if (!addresses) byDomain.set(domain, (addresses = new Map()));
    const known = addresses.get(address);
    if (!known || known.lastSeen < record.last_seen_at) {
      addresses.set(address, { address, ...parsed, lastSeen: record.last_seen_at });
    }
  }
  return byDomain;
}

function compareAddresses(a: string, b: string): number {
  const x = parseIpValue(a)!;
  const y = parseIpValue(b)!;
  if (x.family !== y.family) return x.family - y.family;
  return x.value < y.value ? -1 : x.value > y.value ? 1 : 0;
}

const sortAddresses = (addresses: string[]): string[] => addresses.sort(compareAddresses);
