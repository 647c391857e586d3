import type { Db } from "../../db/connect.js";
import { listModuleAsSets } from "../../db/ingest-inputs.js";
import { findSnapshotGroup, listSnapshotGroupsVia, type SnapshotGroup } from "../../db/snapshots.js";
import { mapLimit } from "../../lib/map-limit.js";
import type { AsnSource } from "../../sources/asn-source.js";
import type { IrrSession } from "../../sources/irr-source.js";

/** One AS-SET entry's expansion, as the job result lists it. */
export interface AsSetOutcome {
  as_set: string;
  ok: boolean;
  /** Member ASNs expanded now; when the expansion failed, those of the last good expansion kept. */
  member_count: number;
  error?: string;
}

export interface CollectedAsSets {
  groups: SnapshotGroup[];
  warnings: { source: string; message: string }[];
  ok: number;
  failed: number;
  as_sets: AsSetOutcome[];
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * A module's AS-SET entries: each set expanded through the refresh's IRR session, each member
 * ASN's prefixes from the ASN source, one snapshot group per member (`source: "asn"`, `origin`
 * the ASN, `via` the set). A failed or over-limit expansion keeps the set's groups of the last
 * snapshot and warns `irr:<as_set>`; a member whose prefixes fail keeps its own group and warns
 * `asn:<asn>`. An ASN in several sets is asked for once.
 */
export async function collectAsSets(
  db: Db,
  deps: { asnSource: AsnSource | null; irr: IrrSession | null; concurrency: number },
  moduleId: string,
  signal: AbortSignal,
): Promise<CollectedAsSets> {
  const out: CollectedAsSets = { groups: [], warnings: [], ok: 0, failed: 0, as_sets: [] };
  const sets = await listModuleAsSets(db, moduleId);
  if (!sets.length) return out;
  const asked = new Map<number, Promise<string[]>>();
  const prefixesOf = (asn: number) => {
    let p = asked.get(asn);
    if (!p) {
      if (!deps.asnSource) p = Promise.reject(new Error("no ASN source is configured (ASN_SOURCE)"));
      else p = deps.asnSource.announcedPrefixes(asn, { signal });
      p.catch(() => {});
      asked.set(asn, p);
    }
    return p;
  };
  const failedAsns = new Set<number>();

  // Sets are expanded side by side on the session's one connection (which bounds its own queries).
  await mapLimit(sets, deps.concurrency, async (asSet) => {
    let members: number[];
    try {
      if (!deps.irr) throw new Error("no IRR server is configured (IRR_SOURCE)");
      members = await deps.irr.expand(asSet);
      out.ok++;
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      const kept = await listSnapshotGroupsVia(db, moduleId, asSet);
      out.groups.push(...kept);
      out.failed++;
      out.warnings.push({ source: `irr:${asSet}`, message: `${messageOf(err)}; kept the ${kept.length} members of the last good expansion` });
      out.as_sets.push({ as_set: asSet, ok: false, member_count: kept.length, error: messageOf(err) });
      return;
    }
    out.as_sets.push({ as_set: asSet, ok: true, member_count: members.length });
    await mapLimit(members, deps.concurrency, async (asn) => {
      try {
        out.groups.push({ source: "asn", origin: String(asn), via: asSet, prefixes: await prefixesOf(asn), seen_at: null });
      } catch (err) {
        if (signal.aborted) throw signal.reason ?? err;
        if (!failedAsns.has(asn)) {
          failedAsns.add(asn);
          out.failed++;
          out.warnings.push({ source: `asn:${asn}`, message: messageOf(err) });
        }
        const previous = await findSnapshotGroup(db, moduleId, "asn", String(asn), asSet);
        if (previous) out.groups.push(previous);
      }
    });
  });
  out.as_sets.sort((a, b) => (a.as_set < b.as_set ? -1 : a.as_set > b.as_set ? 1 : 0));
  return out;
}
