// The `birdc show protocols all` outputs of fixtures/, captured from BIRD 2.0.12 against
// GoBGP 3.10 (see its README.md), and what is known of them: for the tests of the parser and
// of the agent's commands built on it (not part of the build).
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The text of fixtures/<name>.txt. */
export const protocolsFixture = (name: string) => readFileSync(join(import.meta.dirname, "fixtures", `${name}.txt`), "utf8");

/** The first session of fixtures/established.txt (peer a1, Established with GoBGP), as parsed at 05:00 UTC. */
export const ESTABLISHED_A1 = {
  protocol: "rl_peer_0192f3a40000700080000000000000a1",
  peer_id: "0192f3a4-0000-7000-8000-0000000000a1",
  neighbor_address: "127.0.0.2",
  remote_asn: 65001,
  state: "up",
  bgp_state: "Established",
  since: "2026-11-22T04:15:35.000Z",
  routes_imported: 0,
  routes_exported: 4, // 3 IPv4 + 1 IPv6
  last_error: null,
};
