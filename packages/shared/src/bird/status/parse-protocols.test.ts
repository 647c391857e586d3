import { describe, expect, it } from "vitest";
import { ESTABLISHED_A1, protocolsFixture } from "./fixtures.test-helper.js";
import { parseProtocolsAll } from "./parse-protocols.js";

const options = { now: new Date("2026-11-22T05:00:00.000Z"), timeZone: "utc" as const };
const A1 = "0192f3a4-0000-7000-8000-0000000000a1";
const A2 = "0192f3a4-0000-7000-8000-0000000000a2";
const A3 = "0192f3a4-0000-7000-8000-0000000000a3";

describe("parseProtocolsAll", () => {
  it("reads an Established session with its neighbour, ASN, since and exported routes of both channels", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("established"), options);
    expect(sessions[0]).toEqual(ESTABLISHED_A1);
  });

  // BIRD 3 adds `Created:`, import/export state and `RX limit` columns; 2.17 is 2.0's layout.
  it.each([
    ["2.17.6", "2026-11-27T05:50:12.000Z"],
    ["3.1.8", "2026-11-27T05:50:19.000Z"],
  ])("reads BIRD %s's Established session and the routes it exports (Debian 13)", (version, since) => {
    const { sessions, protocols } = parseProtocolsAll(protocolsFixture(`established-${version}`), {
      now: new Date("2026-11-27T06:00:00Z"),
      timeZone: "utc",
    });
    expect(sessions).toEqual([
      {
        protocol: "rl_peer_0192f3a40000700080000000000000e1",
        peer_id: "0192f3a4-0000-7000-8000-0000000000e1",
        neighbor_address: "127.0.0.2",
        remote_asn: 65001,
        state: "up",
        bgp_state: "Established",
        since,
        routes_imported: 0,
        routes_exported: 5, // 3 IPv4 + 2 IPv6
        last_error: null,
      },
    ]);
    expect(protocols.map((p) => p.state)).toEqual(Array(7).fill("up"));
  });

  it("reads an Active session with its last error", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("established"), options);
    expect(sessions[1]).toMatchObject({ peer_id: A2, state: "start", bgp_state: "Active", last_error: "Socket: Connection refused" });
  });

  it("reads a disabled session as down with no error", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("mixed"), options);
    expect(sessions.map((s) => [s.peer_id, s.state, s.bgp_state])).toEqual([
      [A1, "up", "Established"],
      [A2, "start", "Active"],
      [A3, "down", "Down"],
    ]);
    expect(sessions[2]).toMatchObject({ neighbor_address: "127.0.0.4", remote_asn: 65003, last_error: null, since: "2026-11-22T04:15:43.000Z" });
  });

  it("reads a session whose peer went away: Active, no routes exported, the peer's notification as error", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("peer-lost"), options);
    expect(sessions[0]).toMatchObject({
      peer_id: A1,
      state: "start",
      bgp_state: "Active",
      routes_exported: 0,
      last_error: "Received: Peer de-configured",
      since: "2026-11-22T04:15:56.000Z",
    });
  });

  it("reads BIRD's default time-only since as today, and an Idle session after a BGP error", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("idle-bad-peer-as"), options);
    expect(sessions[0]).toMatchObject({ bgp_state: "Idle", state: "start", last_error: "BGP Error: Bad peer AS", since: "2026-11-22T04:16:14.611Z" });
  });

  it("puts a time-only since that lies in the future on the day before", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("idle-bad-peer-as"), { ...options, now: new Date("2026-11-23T01:00:00.000Z") });
    expect(sessions[0]?.since).toBe("2026-11-22T04:16:14.611Z");
  });

  it("lists every protocol's summary but makes sessions of BGP protocols only", () => {
    const { protocols, sessions } = parseProtocolsAll(protocolsFixture("mixed"), options);
    expect(protocols.map((p) => p.proto)).toEqual(["Device", "Static", "Static", "Static", "Static", "BGP", "BGP", "BGP"]);
    expect(protocols[1]).toEqual({
      name: "rl_static4_e3b0c44298fc",
      proto: "Static",
      table: "rl_v4",
      state: "up",
      since: "2026-11-22T04:15:30.000Z",
      info: "",
    });
    expect(sessions).toHaveLength(3);
  });

  it("gives a null peer id to a BGP protocol the agent did not render", () => {
    const text = protocolsFixture("established").replaceAll("rl_peer_0192f3a40000700080000000000000a1", "upstream1");
    expect(parseProtocolsAll(text, options).sessions[0]).toMatchObject({ protocol: "upstream1", peer_id: null, bgp_state: "Established" });
  });

  it("reads times in the host's zone by default", () => {
    const { sessions } = parseProtocolsAll(protocolsFixture("established"), { now: options.now });
    expect(sessions[0]?.since).toBe(new Date(2026, 10, 22, 4, 15, 35).toISOString());
  });

  it("returns nothing for empty text", () => {
    expect(parseProtocolsAll("", options)).toEqual({ protocols: [], sessions: [], channels: [] });
  });
});
