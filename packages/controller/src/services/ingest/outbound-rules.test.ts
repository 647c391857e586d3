import { ValidationError } from "@rlc/shared/errors";
import { describe, expect, it } from "vitest";
import { createOutboundClient } from "../../sources/outbound.js";
import { createOutboundRules, plainHttpAllowed, savedUrl } from "./outbound-rules.js";

const client = createOutboundClient({ allowCidrs: ["10.53.0.0/24"] });
const rules = createOutboundRules(client, "10.53.0.0/24, fd53::/64, not-a-cidr");

describe("a source URL about to be saved", () => {
  it("is stored in its normalised form", () => {
    expect(savedUrl(rules, "HTTPS://Feeds.Example.NET/ips.txt", "url").href).toBe("https://feeds.example.net/ips.txt");
  });

  it("is a 400 naming the field when the outbound policy refuses its form", () => {
    for (const url of ["ftp://feeds.example.net/ips", "https://user:pw@feeds.example.net/", "https://127.0.0.1/ips", "not a url"]) {
      let thrown: unknown;
      try {
        savedUrl(rules, url, "url");
      } catch (err) {
        thrown = err;
      }
      expect(thrown, url).toBeInstanceOf(ValidationError);
      expect((thrown as ValidationError).errors?.[0]?.path, url).toBe("body.url");
    }
  });
});

describe("plain http for a DoH resolver", () => {
  it("is allowed only to an address literal inside APP_OUTBOUND_ALLOW_CIDRS", () => {
    expect(plainHttpAllowed(rules, new URL("http://10.53.0.7/dns-query"))).toBe(true);
    expect(plainHttpAllowed(rules, new URL("http://[fd53::53]/dns-query"))).toBe(true);
    expect(plainHttpAllowed(rules, new URL("http://10.54.0.7/dns-query"))).toBe(false);
    // A name could resolve anywhere: only a literal says where the query goes.
    expect(plainHttpAllowed(rules, new URL("http://resolver.lan/dns-query"))).toBe(false);
  });

  it("ignores what in APP_OUTBOUND_ALLOW_CIDRS is not a CIDR", () => {
    expect(rules.allowed).toHaveLength(2);
  });
});
