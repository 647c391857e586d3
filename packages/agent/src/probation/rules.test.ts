import { parseProtocolsAll } from "@rlc/shared/bird";
import type { BundlePayload } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { fixtureContent } from "../../../../test/helpers/agent-fakes.js";
import { birdFixture } from "../bird-fixtures.test-helper.js";
import { exportCounts, type PlanInput, type ProbationPlan, ProbationWatch, planProbation, tallyOf } from "./rules.js";

// The decisions of the probation on `show protocols all` captured from BIRD 2.0.12 (packages/shared/src/bird/status/fixtures/README.md).

const A1 = "rl_peer_0192f3a40000700080000000000000a1";
const A1_ID = "0192f3a4-0000-7000-8000-0000000000a1";
const parse = (name: string) =>
  parseProtocolsAll(birdFixture(name), {
    now: new Date("2026-11-24T12:00:00Z"),
    timeZone: "utc",
  });

/** fixtureContent with its peer renamed to a1, the session of the captures (IPv4 only, 3 prefixes). */
function payload(change: (p: BundlePayload) => void = () => undefined): BundlePayload {
  const p = { ...fixtureContent(), sequence: 2, issued_at: "", expires_at: "", digest: "" } as BundlePayload;
  p.peers = [{ ...(p.peers[0] as BundlePayload["peers"][number]), id: A1_ID, address_families: ["ipv4"] }];
  change(p);
  return p;
}

function plan(before: string, o: Partial<PlanInput> = {}): ProbationPlan {
  const p = o.payload ?? payload();
  return planProbation({
    before: parse(before).sessions,
    rendered: p.peers.map((peer) => ({ protocol: `rl_peer_${peer.id.replaceAll("-", "")}`, peer_id: peer.id })),
    payload: p,
    previous: null,
    checkSessions: true,
    ...o,
  });
}

/** Feeds the looks in order; the verdict of the first that fails at once, else the end verdict. */
function judge(p: ProbationPlan, looks: string[], controllerOk: boolean | null = true) {
  const watch = new ProbationWatch(p);
  for (const look of looks) {
    const parsed = parse(look);
    const early = watch.observe(
      parsed.sessions,
      parsed.protocols.map((x) => x.name),
    );
    if (early) return early;
  }
  return watch.verdict(controllerOk, 3);
}

describe("planProbation", () => {
  it("plan - watches the sessions Established before whose peer the bundle still has, with what they exported", () => {
    const p = plan("established.txt", {
      payload: payload((x) => x.peers.push({ ...(x.peers[0] as BundlePayload["peers"][number]), id: "0192f3a4-0000-7000-8000-0000000000a2" })),
    });
    // a2 and a3 were Active: nothing to hold them to.
    expect(p.watched).toEqual([{ protocol: A1, peer_id: A1_ID, since: "2026-11-22T04:15:35.000Z", exportedBefore: 4, familyPrefixes: 3, ownDrop: 1 }]);
    expect(p.rendered).toEqual([A1, "rl_peer_0192f3a40000700080000000000000a2"]);
  });

  it("plan - a peer the revision removes is not watched: its session going down is the change", () => {
    expect(plan("established.txt", { payload: payload((x) => (x.peers = [])) }).watched).toEqual([]);
  });

  it("plan - the drop the revision explains comes from the previous bundle's export of that peer", () => {
    const previous = payload();
    const next = payload((x) => (x.prefixes.v4 = x.prefixes.v4.slice(0, 1)));
    expect(plan("probation-established.txt", { payload: next, previous }).watched[0]).toMatchObject({ exportedBefore: 3, familyPrefixes: 1, ownDrop: 2 });
  });

  it("exportCounts - the families the peer carries, and the prefixes its export communities select", () => {
    const p = payload((x) => {
      const peer = x.peers[0] as BundlePayload["peers"][number];
      peer.address_families = ["ipv4", "ipv6"];
      peer.export_communities = ["65000:100"];
    });
    expect(exportCounts(tallyOf(p), p.peers[0] as BundlePayload["peers"][number])).toEqual({ family: 5, selected: 2 });
  });
});

describe("ProbationWatch", () => {
  it("verdict - the session Established all along, exporting what it did: confirmed", () => {
    expect(judge(plan("probation-established.txt"), ["probation-established.txt", "probation-established.txt"])).toEqual({ ok: true });
  });

  it("verdict - Idle with Bad peer AS at the end of the window: sessions_established, with BIRD's reason", () => {
    const v = judge(plan("established.txt"), ["idle-bad-peer-as.txt"]);
    expect(v).toMatchObject({ ok: false, check: "sessions_established", sessions: [A1] });
    expect(v.ok === false && v.message).toMatch(/rl_peer_\w+a1 \(127\.0\.0\.2 AS 65001\) start\/Idle, BGP Error: Bad peer AS/);
  });

  it("verdict - one flap inside the window that came back: confirmed", () => {
    expect(judge(plan("probation-established.txt"), ["probation-restarting.txt", "probation-flapped.txt"])).toEqual({ ok: true });
    // Down and back between two looks shows as a new `since` only.
    expect(judge(plan("probation-established.txt"), ["probation-flapped.txt"])).toEqual({ ok: true });
  });

  it("verdict - a second drop fails at once", () => {
    const v = judge(plan("probation-established.txt"), [
      "probation-restarting.txt",
      "probation-flapped.txt",
      "probation-restarting.txt",
      "probation-established.txt",
    ]);
    expect(v).toMatchObject({ ok: false, check: "sessions_established", sessions: [A1] });
    expect(v.ok === false && v.message).toMatch(/down 2 times/);
  });

  it("verdict - Established but exporting nothing while the bundle holds prefixes of its family: routes_exported", () => {
    const v = judge(plan("probation-established.txt"), ["probation-no-export.txt"]);
    expect(v).toMatchObject({ ok: false, check: "routes_exported", sessions: [A1] });
    expect(v.ok === false && v.message).toContain("exports 0 routes (3 before; the bundle holds 3 prefixes of its families)");
  });

  it("verdict - an export filter that selects nothing is still refused (force_confirm is the way to mean it)", () => {
    const p = payload((x) => ((x.peers[0] as BundlePayload["peers"][number]).export_communities = ["65000:999"]));
    expect(judge(plan("probation-established.txt", { payload: p }), ["probation-no-export.txt"])).toMatchObject({ ok: false, check: "routes_exported" });
  });

  it("verdict - a bundle with no prefixes left: exporting nothing is what it says", () => {
    const p = payload((x) => (x.prefixes = { v4: [], v6: [] }));
    expect(judge(plan("probation-established.txt", { payload: p }), ["probation-no-export.txt"])).toEqual({ ok: true });
  });

  it("verdict - a drop larger than the revision explains plus the margin fails; within it passes", () => {
    const big = (exported: number) => birdFixture("probation-established.txt").replace("0 imported, 3 exported", `0 imported, ${exported} exported`);
    const watchOf = (before: number, after: number) => {
      const p = planProbation({
        before: parseProtocolsAll(big(before), { now: new Date(), timeZone: "utc" }).sessions,
        rendered: [{ protocol: A1, peer_id: A1_ID }],
        payload: payload(),
        previous: payload(),
        checkSessions: true,
      });
      const w = new ProbationWatch(p);
      const look = parseProtocolsAll(big(after), { now: new Date(), timeZone: "utc" });
      w.observe(
        look.sessions,
        look.protocols.map((x) => x.name),
      );
      return w.verdict(true, 3);
    };
    // 1000 before, the revision changes nothing for this peer: 5 % (50) may go, not more.
    expect(watchOf(1000, 950)).toEqual({ ok: true });
    expect(watchOf(1000, 949)).toMatchObject({ ok: false, check: "routes_exported" });
  });

  it("verdict - a rendered protocol BIRD does not list fails at once: protocols_listed", () => {
    const p = plan("probation-established.txt", {
      payload: payload((x) => (x.peers[0] = { ...(x.peers[0] as BundlePayload["peers"][number]), id: "0192f3a4-0000-7000-8000-0000000000ff" })),
    });
    expect(judge(p, ["probation-established.txt"])).toMatchObject({
      ok: false,
      check: "protocols_listed",
      sessions: ["rl_peer_0192f3a40000700080000000000000ff"],
    });
  });

  it("verdict - sessions fine but the controller out of reach: controller_reachable; not asked: confirmed", () => {
    const p = plan("probation-established.txt");
    expect(judge(p, ["probation-established.txt"], false)).toMatchObject({ ok: false, check: "controller_reachable", sessions: [] });
    expect(judge(p, ["probation-established.txt"], null)).toEqual({ ok: true });
  });

  it("verdict - without the session checks (force_confirm) a session left down is accepted", () => {
    expect(judge(plan("established.txt", { checkSessions: false }), ["idle-bad-peer-as.txt"])).toEqual({ ok: true });
  });
});
