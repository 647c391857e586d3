import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeEachBird } from "../../../../../test/helpers/bird-versions.js";
import type { BundlePayload } from "../../bundle/index.js";
import { type RenderOptions, renderBirdConfig } from "./render.js";
import { peerIdFromProtocol, peerProtocolName, RenderError } from "./values.js";

const FIXTURES = join(import.meta.dirname, "fixtures");
const UPDATE = process.env.UPDATE_GOLDEN === "1";
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".json"))
  .map((f) => ({ name: f.replace(/\.json$/, ""), ...(JSON.parse(readFileSync(join(FIXTURES, f), "utf8")) as Fixture) }));

interface Fixture {
  options: RenderOptions;
  payload: BundlePayload;
}

const base = (): BundlePayload => structuredClone(fixtures.find((f) => f.name === "include-basic")?.payload as BundlePayload);

function refusal(payload: BundlePayload, options: RenderOptions = {}): RenderError {
  try {
    renderBirdConfig(payload, options);
  } catch (e) {
    expect(e).toBeInstanceOf(RenderError);
    return e as RenderError;
  }
  throw new Error("expected a RenderError");
}

describe("renderBirdConfig - golden files", () => {
  it.each(fixtures)("$name renders byte for byte as its golden files", ({ name, options, payload }) => {
    const { files } = renderBirdConfig(payload, options);
    for (const [file, text] of Object.entries(files)) {
      const golden = join(FIXTURES, `${name}.${file}`);
      if (UPDATE) writeFileSync(golden, text);
      expect(text, `${golden} differs; UPDATE_GOLDEN=1 rewrites it`).toBe(readFileSync(golden, "utf8"));
    }
  });

  it("gives the same bytes for the same payload", () => {
    expect(renderBirdConfig(base())).toEqual(renderBirdConfig(base()));
  });
});

describeEachBird("renderBirdConfig - bird -p accepts the output", [], (b) => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** `bird -p` of the full-mode render of `payload` for `birdVersion`: its exit status and stderr. */
  function parse(payload: BundlePayload, birdVersion: string | null) {
    const dir = mkdtempSync(join(tmpdir(), "rl-render-"));
    dirs.push(dir);
    const { files, entry } = renderBirdConfig(payload, { mode: "full", birdVersion });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    const r = spawnSync(b.bird, ["-p", "-c", join(dir, entry)], { encoding: "utf8" });
    return { status: r.status, stderr: r.stderr };
  }

  it.each(fixtures)("$name in full mode parses with bird -p", ({ payload }) => {
    // BIRD's stderr (file:line:col message) is the message when it refuses the config.
    expect(parse(payload, null)).toMatchObject({ status: 0 });
  });

  // Rendered for this version, not even a warning: a peer's password says it is MD5 where BIRD asks.
  it.each(fixtures)("$name rendered for this BIRD's version parses with bird -p without a warning", ({ payload }) => {
    expect(parse(payload, b.version)).toEqual({ status: 0, stderr: "" });
  });
});

describe("renderBirdConfig - grouping and tables", () => {
  it("adds a group's communities once in the static import filter, not per route", () => {
    const text = renderBirdConfig(base()).files["rl-routes.conf"] ?? "";
    expect(text.match(/bgp_community\.add\(\(65000,100\)\)/g)).toHaveLength(2); // one v4 group, one v6 group
    expect(text).toContain("  route 198.51.100.0/24 blackhole;\n  route 203.0.113.128/25 blackhole;\n");
    expect(text).not.toMatch(/master|kernel/);
  });

  it("keeps a long prefix list at one short line per route", () => {
    const payload = base();
    payload.prefixes.v4 = Array.from({ length: 100_000 }, (_, i) => [`${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`, ["65000:100"]]);
    const text = renderBirdConfig(payload).files["rl-routes.conf"] ?? "";
    expect(text.length).toBeLessThan(100_000 * 40);
  });

  it("names a community set's protocol after the set, whatever the order of its communities", () => {
    const a = base();
    const b = base();
    b.prefixes.v4 = b.prefixes.v4.map(([p, c]) => [p, [...c].reverse()]);
    expect(renderBirdConfig(b)).toEqual(renderBirdConfig(a));
  });

  it("writes router id, device, timeformat and the include only in full mode", () => {
    const include = renderBirdConfig(base());
    expect(Object.keys(include.files)).toEqual(["rl-routes.conf"]);
    expect(include.files["rl-routes.conf"]).not.toMatch(/router id|protocol device|timeformat/);
    const full = renderBirdConfig(base(), { mode: "full", includeName: "gen.conf", mainName: "main.conf" });
    expect(full.entry).toBe("main.conf");
    expect(full.files["main.conf"]).toMatch(/router id 192\.0\.2\.1;\ntimeformat protocol iso long;\n\nprotocol device \{\n\}\n\ninclude "gen\.conf";/);
  });
});

describe("renderBirdConfig - peers", () => {
  it("names each BGP protocol after its peer id and maps the name back", () => {
    const { sessions } = renderBirdConfig(base());
    expect(sessions.map((s) => s.protocol)).toEqual(["rl_peer_0192f3a40000700080000000000000b1", "rl_peer_0192f3a40000700080000000000000b2"]);
    for (const s of sessions) expect(peerIdFromProtocol(s.protocol)).toBe(s.peer_id);
    expect(peerIdFromProtocol("device1")).toBeNull();
    expect(peerProtocolName("0192F3A4-0000-7000-8000-0000000000B1", "x")).toBe("rl_peer_0192f3a40000700080000000000000b1");
  });

  it("takes the local ASN from the peer, then policies_json, then BIRD, then the speaker", () => {
    const asnOf = (p: BundlePayload) => /local 192\.0\.2\.1 port 179 as (\d+);/.exec(renderBirdConfig(p).files["rl-routes.conf"] ?? "")?.[1];
    const p = base();
    expect(asnOf(p)).toBe("65000");
    p.bird.local_asn = 65300;
    expect(asnOf(p)).toBe("65300");
    p.speaker.policies_json.local_asn = 65200;
    expect(asnOf(p)).toBe("65200");
    (p.peers[0] as BundlePayload["peers"][number]).local_asn = 65100;
    expect(asnOf(p)).toBe("65100");
  });

  it("takes the local address and next hop from policies_json before the BIRD setting", () => {
    const p = base();
    p.speaker.policies_json = { local_ip: "203.0.113.1", local_port: 1179, next_hop_ipv4: "203.0.113.254" };
    const text = renderBirdConfig(p).files["rl-routes.conf"] ?? "";
    expect(text).toContain("local 203.0.113.1 port 1179 as 65000;");
    expect(text).toContain("next hop address 203.0.113.254;");
  });

  it("leaves strict bind out without a local address, since BIRD refuses that", () => {
    const p = base();
    p.bird = { next_hop_ipv6: "2001:db8::254" };
    const text = renderBirdConfig(p).files["rl-routes.conf"] ?? "";
    expect(text).toContain("  local port 179 as 65000;\n  neighbor 192.0.2.10 port 179 as 65001;\n  ipv4");
  });

  it("refuses IPv6 routes over an IPv4 neighbour with no IPv6 next hop", () => {
    const p = base();
    p.bird = { bird_bgp_source_ipv4: "192.0.2.1" };
    expect(refusal(p).path).toBe("peers[0].address_families");
    p.bird.bird_bgp_source_ipv6 = "2001:db8::1";
    expect(renderBirdConfig(p).files["rl-routes.conf"]).toContain("next hop address 2001:db8::1;");
  });

  it("uses extended next hop for IPv4 routes over an IPv6 neighbour with no IPv4 next hop", () => {
    const p = base();
    p.bird = { bird_bgp_source_ipv6: "2001:db8::1" };
    (p.peers[1] as BundlePayload["peers"][number]).address_families = ["ipv4"];
    expect(renderBirdConfig(p).files["rl-routes.conf"]).toMatch(/export filter rl_export_\w+; extended next hop yes; \};/);
  });

  it("exports everything when the peer names no community", () => {
    expect(renderBirdConfig(base()).files["rl-routes.conf"]).toMatch(/rl_peer_\w+b1 \{[^}]*export all;/);
  });
});

describe("renderBirdConfig - nothing reaches the config unchecked", () => {
  const peer = (p: BundlePayload) => p.peers[0] as BundlePayload["peers"][number];

  it.each([
    ["a quote", 'x"; export all; "'],
    ["a newline", "x\n}"],
    ["a NUL", "x\u0000"],
    ["more than 80 bytes", "x".repeat(81)],
  ])("refuses a password with %s", (_what, password) => {
    const p = base();
    peer(p).password = password;
    expect(refusal(p).path).toBe("peers[0].password");
  });

  it("replaces quotes and line breaks in names and titles, which only reach comments and descriptions", () => {
    const p = base();
    peer(p).name = 'x";\n}\nprotocol bgp evil {';
    (p.communities[0] as BundlePayload["communities"][number]).title = "t\nrouter id 6.6.6.6;";
    const text = renderBirdConfig(p).files["rl-routes.conf"] ?? "";
    expect(text).toContain(`description "x';?}?protocol bgp evil {";`);
    expect(text).not.toMatch(/^router id/m);
    expect(text).not.toMatch(/^protocol bgp evil/m);
  });

  it.each([
    ["peers[0].id", (p: BundlePayload) => void (peer(p).id = "peer; protocol")],
    ["peers[0].neighbor_address", (p: BundlePayload) => void (peer(p).neighbor_address = "192.0.2.1; import all")],
    ["peers[0].remote_asn", (p: BundlePayload) => void (peer(p).remote_asn = 0)],
    ["peers[0].neighbor_port", (p: BundlePayload) => void (peer(p).neighbor_port = 70000)],
    ["peers[0].multihop", (p: BundlePayload) => void (peer(p).multihop = 256)],
    ["peers[0].export_communities[0]", (p: BundlePayload) => void (peer(p).export_communities = ["65536:1"])],
    ["prefixes.v4[0]", (p: BundlePayload) => void (p.prefixes.v4[0] = ["10.0.0.1/8", []])],
    ["prefixes.v4[0]", (p: BundlePayload) => void (p.prefixes.v4[0] = ["2001:db8::/32", []])],
    ["prefixes.v6[0]", (p: BundlePayload) => void (p.prefixes.v6[0] = ["2001:db8::1/32", []])],
    ["prefixes.v4[0][1][0]", (p: BundlePayload) => void (p.prefixes.v4[0] = ["10.0.0.0/8", ["1:2:3:4"]])],
    ["bird.static_route_kind", (p: BundlePayload) => void (p.bird.static_route_kind = "prohibit; }" as "blackhole")],
    ["speaker.policies_json.local_port", (p: BundlePayload) => void (p.speaker.policies_json.local_port = 0)],
    ["next_hop_ipv4", (p: BundlePayload) => void (p.bird.next_hop_ipv4 = "1.2.3.4; }")],
  ])("refuses a bad %s", (path, change) => {
    const p = base();
    change(p);
    expect(refusal(p).path).toBe(path);
  });

  it("refuses a file name that is a path and a router id that is not an address", () => {
    expect(refusal(base(), { includeName: "../x.conf" }).path).toBe("includeName");
    const p = base();
    p.speaker.router_id = "1.2.3.4; protocol";
    expect(refusal(p, { mode: "full" }).path).toBe("speaker.router_id");
  });
});

describe("renderBirdConfig - BIRD versions", () => {
  const withoutPasswords = () => {
    const payload = base();
    for (const peer of payload.peers) delete peer.password;
    return payload;
  };
  const withPassword = () => {
    const payload = withoutPasswords();
    (payload.peers[0] as BundlePayload["peers"][number]).password = "s3cret";
    return payload;
  };
  const authLines = (payload: BundlePayload, birdVersion: string | null) =>
    (renderBirdConfig(payload, { birdVersion }).files["rl-routes.conf"] ?? "").split("\n").filter((l) => /password|authentication/.test(l));

  it.each(["2.17.6", "2.18", "3.1.8", "3.3.0"])("says a password is MD5 for BIRD %s, which warns without it", (version) => {
    expect(authLines(withPassword(), version)).toEqual(['  password "s3cret";', "  authentication md5;"]);
  });

  it.each(["2.0.12", "2.16.2", "3.0.2", null, "not a version"])("writes the password alone for BIRD %s, which refuses authentication", (version) => {
    expect(authLines(withPassword(), version)).toEqual(['  password "s3cret";']);
  });

  it("writes no authentication for a peer without a password, on any version", () => {
    expect(authLines(withoutPasswords(), "3.1.8")).toEqual([]);
  });

  it("renders the same bytes for every version when no peer has a password", () => {
    const texts = ["2.0.12", "2.17.6", "3.1.8", null].map((v) => renderBirdConfig(withoutPasswords(), { birdVersion: v }).files);
    for (const t of texts) expect(t).toEqual(texts[0]);
  });
});
