import { describe, expect, it } from "vitest";
import type { BirdControl, BirdReply } from "./birdc.js";
import { BirdVersionWatch, birdDialect, parseBirdVersion } from "./version.js";

const reply = (text: string): BirdReply => ({ code: 0, lines: [], text });
const STATUS = "BIRD 3.1.8\nRouter ID is 127.0.0.1\nCurrent server time is 2026-11-27 05:50:14.000\nDaemon is up and running\n";

/** A BIRD answering `show status` with `status` (or failing), recording the commands. */
function fakeBird(status: () => string) {
  const commands: string[] = [];
  const bird: BirdControl = {
    command: async (command) => {
      commands.push(command);
      return reply(command === "show status" ? status() : "");
    },
    close: () => undefined,
  };
  return { bird, commands };
}

describe("parseBirdVersion", () => {
  it.each([
    ["2.0.12", { major: 2, minor: 0, patch: 12 }],
    ["2.17.6", { major: 2, minor: 17, patch: 6 }],
    ["3.1.8", { major: 3, minor: 1, patch: 8 }],
    ["2.18", { major: 2, minor: 18, patch: 0 }],
    ["3.0alpha2", { major: 3, minor: 0, patch: 0 }],
  ])("reads %s", (text, version) => {
    expect(parseBirdVersion(text)).toEqual(version);
  });

  it.each([null, undefined, "", "BIRD", "?"])("gives null for %s", (text) => {
    expect(parseBirdVersion(text)).toBeNull();
  });
});

describe("birdDialect", () => {
  it.each([
    ["2.0.12", { authenticationOption: false, stampsReverts: false }],
    ["2.16.2", { authenticationOption: false, stampsReverts: false }],
    ["2.17.6", { authenticationOption: true, stampsReverts: false }],
    ["3.0.2", { authenticationOption: false, stampsReverts: true }],
    ["3.1.8", { authenticationOption: true, stampsReverts: true }],
    ["3.3.0", { authenticationOption: true, stampsReverts: true }],
    [null, { authenticationOption: false, stampsReverts: false }],
  ])("BIRD %s", (version, dialect) => {
    expect(birdDialect(version)).toEqual(dialect);
  });
});

describe("BirdVersionWatch", () => {
  it("learns the version from a show status that passes through, without asking again", async () => {
    const { bird, commands } = fakeBird(() => STATUS);
    const watch = new BirdVersionWatch(bird);
    await watch.command("show status");
    expect(await watch.version()).toBe("3.1.8");
    expect(commands).toEqual(["show status"]);
  });

  it("asks show status once when no version was seen, and follows BIRD's later answers", async () => {
    let status = STATUS;
    const { bird, commands } = fakeBird(() => status);
    const watch = new BirdVersionWatch(bird);
    expect(await watch.version()).toBe("3.1.8");
    expect(await watch.version()).toBe("3.1.8");
    status = STATUS.replace("3.1.8", "3.2.0"); // BIRD upgraded and restarted
    await watch.command("show status");
    expect(await watch.version()).toBe("3.2.0");
    expect(commands).toEqual(["show status", "show status"]);
  });

  it("gives null while BIRD does not answer, and asks again next time", async () => {
    let up = false;
    const commands: string[] = [];
    const watch = new BirdVersionWatch({
      command: async (command) => {
        commands.push(command);
        if (!up) throw new Error("connect ENOENT");
        return reply(STATUS);
      },
      close: () => undefined,
    });
    expect(await watch.version()).toBeNull();
    up = true;
    expect(await watch.version()).toBe("3.1.8");
    expect(commands).toEqual(["show status", "show status"]);
  });
});
