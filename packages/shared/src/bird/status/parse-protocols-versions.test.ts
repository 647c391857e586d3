import { describe, expect, it } from "vitest";
import { protocolsFixture } from "./fixtures.test-helper.js";
import { parseProtocolsAll } from "./parse-protocols.js";

// The same three peers in the same four states on each supported BIRD (fixtures/README.md,
// `three-peers-*`): the sessions read the same on every version; BIRD 3's extra lines (Created,
// Import/Export state, Pending … prefixes to send, more route stat columns) are read, not mistaken.

const VERSIONS = ["2.0.12", "2.17.6", "3.1.8"] as const;
const parse = (state: string, version: string) =>
  parseProtocolsAll(protocolsFixture(`three-peers-${state}-${version}`), { now: new Date("2026-11-27T12:00:00Z"), timeZone: "utc" });
const peer = (n: string) => `0192f3a4-0000-7000-8000-0000000000${n}`;
/** [peer, state, BGP state, neighbour, ASN, exported, last error] of each session. */
const rows = (state: string, version: string) =>
  parse(state, version).sessions.map((s) => [s.peer_id, s.state, s.bgp_state, s.neighbor_address, s.remote_asn, s.routes_exported, s.last_error]);
const REFUSED = "Socket: Connection refused";

describe.each(VERSIONS)("parseProtocolsAll on BIRD %s (a real session to GoBGP 3.10)", (version) => {
  it("reads the Established session with its 3 IPv4 + 1 IPv6 routes exported, the others Active", () => {
    expect(rows("established", version)).toEqual([
      [peer("a1"), "up", "Established", "127.0.0.2", 65001, 4, null],
      // 2.17's capture caught a2 before its first connect failed: Active with no error yet.
      [peer("a2"), "start", "Active", "127.0.0.3", 65002, 0, version === "2.17.6" ? null : REFUSED],
      [peer("a3"), "start", "Active", "127.0.0.4", 65003, 0, REFUSED],
    ]);
    expect(parse("established", version).protocols.map((p) => p.proto)).toEqual(["Device", "Static", "Static", "Static", "Static", "BGP", "BGP", "BGP"]);
  });

  it("reads a disabled session as down with no error", () => {
    expect(rows("mixed", version)[2]).toEqual([peer("a3"), "down", "Down", "127.0.0.4", 65003, 0, null]);
  });

  it("reads the session whose peer went away: Active, nothing exported, the socket's error", () => {
    expect(rows("peer-lost", version)[0]).toEqual([peer("a1"), "start", "Active", "127.0.0.2", 65001, 0, "Socket: Connection closed"]);
  });

  it("reads BIRD's default time-only since and an Idle session after a BGP error", () => {
    const [a1] = parse("idle-bad-peer-as", version).sessions;
    expect(a1).toMatchObject({ state: "start", bgp_state: "Idle", last_error: "BGP Error: Bad peer AS" });
    expect(a1?.since).toMatch(/^2026-11-27T11:4\d:\d\d\.\d{3}Z$/);
  });

  it("reads each channel of the Established session with its routes", () => {
    const channels = parse("established", version).channels.filter((c) => c.protocol.endsWith("a1"));
    const bird3 = version.startsWith("3.");
    expect(channels).toEqual(
      [
        ["ipv4", 3],
        ["ipv6", 1],
      ].map(([channel, exported]) => ({
        protocol: "rl_peer_0192f3a40000700080000000000000a1",
        channel,
        state: "UP",
        import_state: bird3 ? "UP" : null,
        export_state: bird3 ? "READY" : null,
        import_filter: "REJECT",
        export_filter: "ACCEPT",
        routes_imported: 0,
        routes_exported: exported,
        routes_filtered: 0,
        routes_preferred: 0,
        pending_prefixes: bird3 ? 0 : null,
      })),
    );
  });
});

describe("BIRD 3's extra lines", () => {
  it("gives every protocol its Created time on BIRD 3 and none on BIRD 2", () => {
    expect(parse("established", "3.1.8").protocols.map((p) => p.created)).toEqual(Array(8).fill("2026-11-27T11:45:09.000Z"));
    expect(parse("idle-bad-peer-as", "3.1.8").protocols[0]?.created).toBe("2026-11-27T11:45:09.902Z");
    for (const version of ["2.0.12", "2.17.6"]) expect(parse("established", version).protocols.every((p) => p.created === undefined)).toBe(true);
  });

  it("reads a down channel's split state, and a static protocol's channel that exports nothing", () => {
    const { channels } = parse("peer-lost", "3.1.8");
    expect(channels.find((c) => c.protocol.endsWith("a1") && c.channel === "ipv4")).toMatchObject({
      state: "DOWN",
      import_state: "DOWN",
      export_state: "DOWN",
    });
    expect(channels[0]).toMatchObject({ channel: "ipv4", state: "UP", import_state: "UP", export_state: "DOWN", routes_imported: 1, routes_exported: 0 });
  });

  it("counts a session's routes once, though BIRD 3 prints two more route stat columns", () => {
    const [three, two] = [parse("established", "3.1.8"), parse("established", "2.0.12")];
    expect(three.sessions.map((s) => [s.routes_imported, s.routes_exported])).toEqual(two.sessions.map((s) => [s.routes_imported, s.routes_exported]));
  });
});
