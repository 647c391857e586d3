import { describe, expect, it } from "vitest";
import { OutboundRefusedError } from "./outbound-errors.js";
import { checkUrlForm, createAddressPolicy } from "./outbound-policy.js";

const policy = createAddressPolicy();

describe("address policy", () => {
  it.each([
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.1.1", "link_local"],
    ["169.254.169.254", "metadata"],
    ["100.100.100.200", "metadata"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.255", "cgnat"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.10", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fc00::1", "unique_local"],
    ["fd12:3456::1", "unique_local"],
    ["fe80::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["febf::1", "link_local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["fd00:ec2::254", "metadata"],
    ["64:ff9b:1::1", "reserved"],
    ["2001:0:4136:e378::1", "reserved"],
    ["4000::1", "reserved"],
  ])("refuses %s as %s", (address, reason) => {
    expect(policy.refusal(address)).toMatchObject({ reason });
  });

  it.each([
    ["::ffff:127.0.0.1", "loopback", "127.0.0.1"],
    ["::ffff:7f00:1", "loopback", "127.0.0.1"],
    ["::ffff:a9fe:a9fe", "metadata", "169.254.169.254"],
    ["::ffff:10.0.0.1", "private", "10.0.0.1"],
    ["::127.0.0.1", "loopback", "127.0.0.1"],
    ["64:ff9b::127.0.0.1", "loopback", "127.0.0.1"],
    ["64:ff9b::a00:1", "private", "10.0.0.1"],
    ["2002:7f00:1::", "loopback", "127.0.0.1"],
    ["2002:c0a8:101::1", "private", "192.168.1.1"],
  ])("refuses %s, an IPv6 form of a refused IPv4, as %s", (address, reason, via) => {
    expect(policy.refusal(address)).toMatchObject({ reason, via });
  });

  it.each(["8.8.8.8", "1.1.1.1", "13.32.0.1", "2606:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::808:808"])(
    "lets the public address %s through",
    (address) => {
      expect(policy.refusal(address)).toBeNull();
    },
  );

  it("lets an allow-listed range through, in its IPv4-mapped form too", () => {
    const allowing = createAddressPolicy(["127.0.0.0/8", "fd00::/8", "192.168.1.5"]);
    expect(allowing.refusal("127.0.0.2")).toBeNull();
    expect(allowing.refusal("::ffff:127.0.0.2")).toBeNull();
    expect(allowing.refusal("fd00::1")).toBeNull();
    expect(allowing.refusal("192.168.1.5")).toBeNull();
    expect(allowing.refusal("192.168.1.6")).toMatchObject({ reason: "private" });
    expect(allowing.refusal("::1")).toMatchObject({ reason: "loopback" });
  });

  it("refuses a malformed allow-list entry when the policy is built", () => {
    expect(() => createAddressPolicy(["10.0.0.0/33"])).toThrow(/not an address or CIDR/);
    expect(() => createAddressPolicy(["localhost"])).toThrow(/not an address or CIDR/);
  });
});

describe("checkUrlForm", () => {
  const refusal = (url: string) => {
    try {
      checkUrlForm(url, policy);
    } catch (err) {
      expect(err).toBeInstanceOf(OutboundRefusedError);
      return (err as OutboundRefusedError).reason;
    }
    return null;
  };

  it.each([
    ["http://127.0.0.1/", "loopback"],
    ["http://127.1/", "loopback"],
    ["http://0x7f000001/", "loopback"],
    ["http://2130706433/", "loopback"],
    ["http://017700000001/", "loopback"],
    ["http://0x7f.0.0.1/", "loopback"],
    ["http://%31%32%37.0.0.1/", "loopback"],
    ["http://[::1]:8080/", "loopback"],
    ["http://[::ffff:127.0.0.1]/", "loopback"],
    ["http://[::ffff:7f00:1]/", "loopback"],
    ["http://169.254.169.254/latest/meta-data/", "metadata"],
    ["http://100.64.0.1/", "cgnat"],
    ["http://[fc00::1]/", "unique_local"],
    ["http://[fe80::1]/", "link_local"],
    ["http://0/", "unspecified"],
    ["http://[::]/", "unspecified"],
    ["file:///etc/passwd", "scheme"],
    ["gopher://example.com/", "scheme"],
    ["ftp://example.com/list.txt", "scheme"],
    ["https://user:secret@example.com/", "credentials"],
    ["https://user@example.com/", "credentials"],
    ["not a url", "invalid_url"],
  ])("refuses %s (%s)", (url, reason) => {
    expect(refusal(url)).toBe(reason);
  });

  it("accepts http(s) URLs with public literals or host names, which are checked at connect time", () => {
    expect(refusal("https://ip-ranges.amazonaws.com/ip-ranges.json")).toBeNull();
    expect(refusal("http://8.8.8.8/")).toBeNull();
    expect(refusal("https://[2606:4700::1111]/dns-query")).toBeNull();
    expect(refusal("http://localhost/")).toBeNull();
  });

  it("carries the refused address and the URL on the error", () => {
    try {
      checkUrlForm("http://[::ffff:7f00:1]:81/x", policy);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({
        code: "outbound_refused",
        reason: "loopback",
        address: "::ffff:7f00:1",
        via: "127.0.0.1",
        url: "http://[::ffff:7f00:1]:81/x",
      });
    }
  });
});
