import type { BgpSessionLive } from "@rlc/shared/bird";
import type { BundlePayload, BundlePeer } from "@rlc/shared/bundle";

/** The checks of a probation, in the order they are judged; the first that fails is reported. */
export type ProbationCheck = "protocols_listed" | "sessions_established" | "routes_exported" | "controller_reachable";

/** A BGP session the probation holds to its rules. */
export interface WatchedSession {
  protocol: string;
  /** null for a protocol the operator wrote (include mode): held to the session rule only. */
  peer_id: string | null;
  /** BIRD's `since` before the configure: a later one while Established means it went down and back. */
  since: string | null;
  /** routes_exported before the configure. */
  exportedBefore: number;
  /** Prefixes of the bundle in the families the session carries, whatever its export filter. */
  familyPrefixes: number;
  /** Routes the revision itself takes from this session (what its filter selected before and no longer does). */
  ownDrop: number;
}

export interface ProbationPlan {
  /** Every BGP protocol just rendered: BIRD must list each of them. */
  rendered: string[];
  /** Sessions Established before the configure whose peer is still in the bundle. */
  watched: WatchedSession[];
  /** false with force_confirm or a zero window: only the listing (and the controller) are checked. */
  checkSessions: boolean;
}

export interface PlanInput {
  /** Sessions as BIRD listed them just before `configure timeout`. */
  before: readonly BgpSessionLive[];
  /** The protocols the new configuration renders, with their peers. */
  rendered: readonly { protocol: string; peer_id: string }[];
  payload: BundlePayload;
  /** The bundle BIRD ran until now, when the agent has it: says what the revision itself changes. */
  previous: BundlePayload | null;
  checkSessions: boolean;
  /** The two bundles' prefixes counted by community set, when the agent counted them from its columns (else counted from the payloads). */
  tallies?: { payload(): PrefixTally | null; previous(): PrefixTally | null };
}

/** A bundle's prefixes counted by family and communities: all the export rule needs of them. */
export type PrefixTally = readonly { v6: boolean; communities: readonly string[]; count: number }[];

/** The tally of a payload's prefixes (one pass over them). */
export function tallyOf(payload: BundlePayload): PrefixTally {
  const tally: { v6: boolean; communities: readonly string[]; count: number }[] = [];
  for (const [key, v6] of [
    ["v4", false],
    ["v6", true],
  ] as const) {
    // Decoded sections share one communities array per set: counted by array, not by prefix.
    const byArray = new Map<readonly string[], { v6: boolean; communities: readonly string[]; count: number }>();
    for (const [, communities] of payload.prefixes?.[key] ?? []) {
      let entry = byArray.get(communities);
      if (!entry) byArray.set(communities, (entry = { v6, communities, count: 0 }));
      entry.count++;
    }
    tally.push(...byArray.values());
  }
  return tally;
}

export type ProbationVerdict = { ok: true } | { ok: false; check: ProbationCheck; sessions: string[]; message: string };

/** How many routes more than the revision explains a session may lose: 5 %, at least 10. */
export function exportMargin(exportedBefore: number): number {
  return Math.max(10, Math.ceil(exportedBefore * 0.05));
}

/** Whom the probation watches, and what each session should still export. */
export function planProbation(input: PlanInput): ProbationPlan {
  const rendered = new Map(input.rendered.map((s) => [s.protocol, s.peer_id]));
  const newPeers = new Map((input.payload.peers ?? []).map((p) => [p.id, p]));
  const oldPeers = new Map((input.previous?.peers ?? []).map((p) => [p.id, p]));
  // Counted once, and only when a session is watched: the payload's tuples are decoded then.
  const once = <T>(make: () => T) => {
    let made: T | undefined;
    return () => (made ??= make());
  };
  const tallies = {
    payload: once(() => input.tallies?.payload() ?? tallyOf(input.payload)),
    previous: once(() => input.tallies?.previous() ?? (input.previous ? tallyOf(input.previous) : [])),
  };
  const watched: WatchedSession[] = [];
  for (const s of input.before) {
    if (s.bgp_state !== "Established") continue;
    // A session of a peer the revision removes goes down by design; the operator's own stay watched.
    if (s.peer_id !== null && !rendered.has(s.protocol)) continue;
    const peer = s.peer_id === null ? undefined : newPeers.get(rendered.get(s.protocol) ?? "");
    const now = peer ? exportCounts(tallies.payload(), peer) : { family: 0, selected: 0 };
    const oldPeer = s.peer_id === null ? undefined : oldPeers.get(rendered.get(s.protocol) ?? "");
    const before = oldPeer && input.previous ? exportCounts(tallies.previous(), oldPeer).selected : s.routes_exported;
    watched.push({
      protocol: s.protocol,
      peer_id: s.peer_id,
      since: s.since,
      exportedBefore: s.routes_exported,
      familyPrefixes: now.family,
      ownDrop: peer ? Math.max(0, before - now.selected) : 0,
    });
  }
  return { rendered: [...rendered.keys()], watched, checkSessions: input.checkSessions };
}

/** Prefixes of the peer's families, and those its export communities select (all when it names none). */
export function exportCounts(tally: PrefixTally, peer: BundlePeer): { family: number; selected: number } {
  const families = new Set(peer.address_families ?? []);
  const wanted = new Set(peer.export_communities ?? []);
  let family = 0;
  let selected = 0;
  for (const { v6, communities, count } of tally) {
    if (!families.has(v6 ? "ipv6" : "ipv4")) continue;
    family += count;
    if (wanted.size === 0 || communities.some((c) => wanted.has(c))) selected += count;
  }
  return { family, selected };
}

interface Seen {
  established: boolean;
  since: string | null;
  downs: number;
  /** The operator's protocol is gone from BIRD's list: their config dropped it, not ours. */
  gone: boolean;
}

/**
 * Follows the sessions through the window, one `show protocols all` after another. A session
 * may go down once (a reconfigured protocol restarts) and must be back by the end; a second
 * drop fails at once, as does a rendered protocol BIRD does not list.
 */
export class ProbationWatch {
  readonly #plan: ProbationPlan;
  readonly #seen = new Map<string, Seen>();
  #last: readonly BgpSessionLive[] = [];

  constructor(plan: ProbationPlan) {
    this.#plan = plan;
    for (const w of plan.watched) this.#seen.set(w.protocol, { established: true, since: w.since, downs: 0, gone: false });
  }

  /** One look at BIRD's sessions (and protocol names); a failing verdict when it cannot pass any more. */
  observe(sessions: readonly BgpSessionLive[], protocolNames: Iterable<string>): ProbationVerdict | null {
    this.#last = sessions;
    const listed = new Set(protocolNames);
    const missing = this.#plan.rendered.filter((p) => !listed.has(p));
    if (missing.length > 0) {
      return { ok: false, check: "protocols_listed", sessions: missing, message: `BIRD does not list ${missing.join(", ")} after configure` };
    }
    if (!this.#plan.checkSessions) return null;
    const byName = new Map(sessions.map((s) => [s.protocol, s]));
    const flapping: string[] = [];
    for (const w of this.#plan.watched) {
      const seen = this.#seen.get(w.protocol) as Seen;
      const s = byName.get(w.protocol);
      if (!s) {
        seen.gone = true;
        continue;
      }
      const established = s.bgp_state === "Established";
      // Down and back between two looks shows only as a new `since`.
      if (seen.established && (!established || (s.since !== null && seen.since !== null && s.since !== seen.since))) seen.downs++;
      seen.established = established;
      seen.since = s.since;
      if (seen.downs > 1) flapping.push(w.protocol);
    }
    if (flapping.length > 0) {
      return {
        ok: false,
        check: "sessions_established",
        sessions: flapping,
        message: `BGP session went down more than once during the probation: ${this.#describe(flapping)}`,
      };
    }
    return null;
  }

  /** The verdict at the end of the window, on the last look; `controllerOk` null = not checked. */
  verdict(controllerOk: boolean | null, windowSeconds: number): ProbationVerdict {
    if (this.#plan.checkSessions) {
      const byName = new Map(this.#last.map((s) => [s.protocol, s]));
      const live = this.#plan.watched.filter((w) => !this.#seen.get(w.protocol)?.gone);
      const down = live.filter((w) => byName.get(w.protocol)?.bgp_state !== "Established").map((w) => w.protocol);
      if (down.length > 0) {
        return {
          ok: false,
          check: "sessions_established",
          sessions: down,
          message: `BGP session not Established again at the end of the ${windowSeconds} s probation: ${this.#describe(down)}`,
        };
      }
      const short: string[] = [];
      const details: string[] = [];
      for (const w of live) {
        if (w.peer_id === null || w.exportedBefore === 0) continue;
        const after = byName.get(w.protocol)?.routes_exported ?? 0;
        if (after === 0 && w.familyPrefixes > 0) {
          short.push(w.protocol);
          details.push(`${w.protocol} exports 0 routes (${w.exportedBefore} before; the bundle holds ${w.familyPrefixes} prefixes of its families)`);
        } else if (w.exportedBefore - after > w.ownDrop + exportMargin(w.exportedBefore)) {
          short.push(w.protocol);
          details.push(`${w.protocol} exports ${after} routes, ${w.exportedBefore} before (the revision explains a drop of ${w.ownDrop})`);
        }
      }
      if (short.length > 0) return { ok: false, check: "routes_exported", sessions: short, message: details.join("; ") };
    }
    if (controllerOk === false) {
      return {
        ok: false,
        check: "controller_reachable",
        sessions: [],
        message: `the agent could not reach the controller at the end of the ${windowSeconds} s probation`,
      };
    }
    return { ok: true };
  }

  #describe(protocols: readonly string[]): string {
    const byName = new Map(this.#last.map((s) => [s.protocol, s]));
    return protocols
      .map((p) => {
        const s = byName.get(p);
        if (!s) return `${p} (not listed)`;
        const who = [s.neighbor_address, s.remote_asn === null ? null : `AS ${s.remote_asn}`].filter(Boolean).join(" ");
        const downs = this.#seen.get(p)?.downs ?? 0;
        return `${p} (${who || "?"}) ${s.state}/${s.bgp_state ?? "?"}${s.last_error ? `, ${s.last_error}` : ""}${downs > 1 ? `, down ${downs} times` : ""}`;
      })
      .join("; ");
  }
}
