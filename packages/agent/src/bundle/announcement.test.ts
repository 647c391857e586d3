import { BundleError, CURRENT_ANNOUNCEMENT } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { deltaBase, headCheckFor } from "./announcement.js";

const head = { keyId: "0123456789abcdef", header: new Uint8Array(), signature: new Uint8Array() };

describe("what the agent accepts decides what it asks for and takes", () => {
  it("this release's agent asks for deltas and leaves the head check as it is", () => {
    const check = () => undefined;
    expect(headCheckFor(CURRENT_ANNOUNCEMENT, check)).toBe(check);
    expect(deltaBase(CURRENT_ANNOUNCEMENT, 7)).toBe(7);
  });

  it("the agent of the release before (RL_BUNDLE_FORMATS=rl-bundle/1) asks for no delta and refuses an rl-bundle/2 at its head", () => {
    expect(deltaBase(null, 7)).toBeNull();
    const refuse = headCheckFor(null, () => undefined)!;
    expect(() => refuse(head)).toThrow(BundleError);
    try {
      refuse(head);
    } catch (error) {
      expect((error as BundleError).code).toBe("unsupported_format");
    }
  });
});
