import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FeedParseError, parseJsonFeed, parseTextFeed } from "./cdn-parse.js";
import { JsonPathError } from "./json-path.js";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");
/** The rejected-sample entries of `values`, all refused for `reason`. */
const rejectedAs = (reason: string, ...values: string[]) => values.map((value) => ({ value, reason }));

describe("parseTextFeed", () => {
  it("reads the text list: comments, blanks, garbage and host bits", () => {
    const result = parseTextFeed(fixture("text-list.txt"));
    expect(result.prefixes).toEqual(["198.51.100.0/24", "203.0.113.5/32", "192.0.2.0/25", "2001:db8::/48", "2001:db8::1/128", "10.0.0.0/8"]);
    expect(result.masked).toBe(2);
    expect(result.rejected).toBe(6);
    expect(result.rejectedSample).toEqual([
      ...rejectedAs("not_an_address", "not-an-ip", "300.1.2.3/24"),
      ...rejectedAs("bad_prefix_length", "10.0.0.0/33", "2001:db8::/129"),
      ...rejectedAs("not_an_address", "1.2.3.4 5.6.7.8", "010.0.0.1"),
    ]);
  });

  it("answers an empty list for a feed of comments only", () => {
    expect(parseTextFeed("# nothing\n\n; here\n")).toEqual({ prefixes: [], masked: 0, rejected: 0, rejectedSample: [] });
  });

  it("keeps a sample of the first 20 rejected values and counts all of them", () => {
    const result = parseTextFeed(Array.from({ length: 50 }, (_, i) => `junk-${i}`).join("\n"));
    expect(result.rejected).toBe(50);
    expect(result.rejectedSample).toHaveLength(20);
    expect(result.rejectedSample[19]).toEqual({ value: "junk-19", reason: "not_an_address" });
  });

  it("cuts a long rejected value in the sample", () => {
    const result = parseTextFeed("x".repeat(5000));
    expect(result.rejectedSample[0]?.value).toHaveLength(200);
  });

  it("strips a byte-order mark and accepts bare LF and CR line ends", () => {
    expect(parseTextFeed("\uFEFF1.1.1.0/24\n8.8.8.8\r9.9.9.9").prefixes).toEqual(["1.1.1.0/24", "8.8.8.8/32", "9.9.9.9/32"]);
  });

  it("refuses zone ids and IPv4 forms other than the dotted quad", () => {
    const result = parseTextFeed("fe80::1%eth0\n0x7f000001\n127.1\n2130706433");
    expect(result.prefixes).toEqual([]);
    expect(result.rejected).toBe(4);
  });
});

describe("parseJsonFeed", () => {
  const aws = fixture("aws-ip-ranges.json");

  it("AWS: every IPv4 prefix, duplicates across services counted once", () => {
    const result = parseJsonFeed(aws, "prefixes[*].ip_prefix");
    expect(result.prefixes).toEqual(["3.2.34.0/26", "13.32.0.0/15", "52.84.0.0/15", "54.239.128.0/18", "3.5.140.0/22", "15.230.39.0/31", "52.95.110.0/24"]);
    expect(result.rejected).toBe(0);
  });

  it("AWS: the IPv6 prefixes", () => {
    expect(parseJsonFeed(aws, "ipv6_prefixes[*].ipv6_prefix").prefixes).toEqual([
      "2600:1f00:6000::/40",
      "2600:9000:2000::/36",
      "2600:9000:3000::/36",
      "2a05:d07a:a000::/40",
    ]);
  });

  it("AWS: one service with a filter", () => {
    expect(parseJsonFeed(aws, "prefixes[*]?service=CLOUDFRONT.ip_prefix").prefixes).toEqual(["13.32.0.0/15", "52.84.0.0/15", "54.239.128.0/18"]);
    expect(parseJsonFeed(aws, "ipv6_prefixes[*]?service=CLOUDFRONT.ipv6_prefix").prefixes).toEqual(["2600:9000:2000::/36", "2600:9000:3000::/36"]);
  });

  it("Google: elements with the other family's key are skipped, not rejected", () => {
    const goog = fixture("google-goog.json");
    const v4 = parseJsonFeed(goog, "prefixes[*].ipv4Prefix");
    expect(v4.prefixes).toEqual(["8.8.4.0/24", "8.8.8.0/24", "8.34.208.0/20", "34.0.0.0/15"]);
    expect(v4.rejected).toBe(0);
    expect(parseJsonFeed(goog, "prefixes[*].ipv6Prefix").prefixes).toEqual(["2001:4860::/32", "2404:6800::/32", "2607:f8b0::/32"]);
  });

  it("Cloudflare: a plain array of strings", () => {
    const cloudflare = fixture("cloudflare-ips.json");
    expect(parseJsonFeed(cloudflare, "result.ipv4_cidrs").prefixes).toHaveLength(6);
    expect(parseJsonFeed(cloudflare, "result.ipv6_cidrs").prefixes).toEqual(["2400:cb00::/32", "2606:4700::/32", "2803:f800::/32", "2a06:98c0::/29"]);
    expect(parseJsonFeed(cloudflare, "result.ipv4_cidrs[0]").prefixes).toEqual(["173.245.48.0/20"]);
  });

  it("Fastly: both arrays", () => {
    const fastly = fixture("fastly-public-ip-list.json");
    expect(parseJsonFeed(fastly, "addresses").prefixes).toEqual(["23.235.32.0/20", "43.249.72.0/22", "103.244.50.0/24", "151.101.0.0/16", "199.232.0.0/16"]);
    expect(parseJsonFeed(fastly, "ipv6_addresses[*]").prefixes).toEqual(["2a04:4e40::/32", "2a04:4e42::/32"]);
  });

  it("masks host bits and rejects values that are not strings or not prefixes", () => {
    const doc = JSON.stringify({ list: ["10.1.2.3/8", " 10.0.0.0/8 ", 42, null, { p: "1.0.0.0/8" }, "", "nope", ["1.2.3.4"]] });
    const result = parseJsonFeed(doc, "list");
    expect(result.prefixes).toEqual(["10.0.0.0/8"]);
    expect(result.masked).toBe(1);
    expect(result.rejectedSample).toEqual([
      ...rejectedAs("not_a_string", "42", "null", '{"p":"1.0.0.0/8"}'),
      ...rejectedAs("not_an_address", "", "nope"),
      ...rejectedAs("not_a_string", '["1.2.3.4"]'),
    ]);
  });

  it("answers an empty result when the path reaches nothing", () => {
    expect(parseJsonFeed(aws, "prefixes[*]?service=NOPE.ip_prefix").prefixes).toEqual([]);
  });

  it("throws FeedParseError on text that is not JSON and JsonPathError on a bad path", () => {
    expect(() => parseJsonFeed("<html>", "a")).toThrow(FeedParseError);
    expect(() => parseJsonFeed("{}", "a[")).toThrow(JsonPathError);
  });
});
