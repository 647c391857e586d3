import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BirdClient, BirdError } from "./birdc.js";

// Real BIRD 2.0.12 replies, captured on its control socket (fixtures/README.md).
const [greeting = "", ...replies] = readFileSync(join(import.meta.dirname, "fixtures", "socket-transcript.txt"), "utf8").split("\n=====\n");
const CAPTURED: Record<string, string> = {
  "show status": replies[0] ?? "",
  "show protocols all rl_peer_0192f3a40000700080000000000000a2": replies[1] ?? "",
  "show protocols all nosuch": replies[2] ?? "",
  "show nonsense": replies[3] ?? "",
  "configure check": replies[4] ?? "",
};

interface FakeBird {
  path: string;
  server: Server;
  connections: number;
  received: string[];
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A Unix socket that answers like BIRD, from the captured replies; `handle` overrides per command. */
async function fakeBird(handle?: (command: string, socket: Socket) => boolean): Promise<FakeBird> {
  const dir = mkdtempSync(join(tmpdir(), "rl-birdc-"));
  const fake: FakeBird = { path: join(dir, "bird.ctl"), server: createServer(), connections: 0, received: [] };
  fake.server.on("connection", (socket) => {
    fake.connections++;
    socket.on("error", () => undefined); // the client may hang up mid-write; that is the test
    socket.write(greeting);
    let buffer = "";
    socket.on("data", (chunk) => {
      buffer += chunk.toString();
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        const command = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        fake.received.push(command);
        if (handle?.(command, socket)) continue;
        socket.write(CAPTURED[command] ?? "9001 syntax error\n");
      }
    });
  });
  await new Promise<void>((resolve) => fake.server.listen(fake.path, resolve));
  cleanups.push(() => {
    fake.server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return fake;
}

function client(path: string, timeoutMs = 2000): BirdClient {
  const c = new BirdClient({ socketPath: path, timeoutMs });
  cleanups.unshift(() => c.close());
  return c;
}

describe("BirdClient", () => {
  it("reads the greeting, then a multi-line reply with continuation lines", async () => {
    const bird = client((await fakeBird()).path);
    const reply = await bird.command("show status");
    expect(bird.greeting).toBe("BIRD 2.0.12 ready.");
    expect(reply.code).toBe(13);
    expect(reply.lines[0]).toEqual({ code: 1000, text: "BIRD 2.0.12" });
    expect(reply.lines[2]).toEqual({ code: 1011, text: "Hostname is vm" });
    expect(reply.text.split("\n")).toEqual([
      "BIRD 2.0.12",
      "Router ID is 127.0.0.1",
      "Hostname is vm",
      "Current server time is 2026-11-22 04:15:49.716",
      "Last reboot on 2026-11-22 04:15:30.682",
      "Last reconfiguration on 2026-11-22 04:15:30.682",
      "Daemon is up and running",
    ]);
  });

  it("gives a reply's text as birdc prints it, so the status parser reads both the same way", async () => {
    const bird = client((await fakeBird()).path);
    const reply = await bird.command("show protocols all rl_peer_0192f3a40000700080000000000000a2");
    expect(reply.code).toBe(0);
    expect(reply.text).toMatch(/^Name {7}Proto.*\nrl_peer_\w+ BGP .*Socket: Connection refused\n {2}Description: {4}nobody\n/);
    expect(reply.text).toContain("\n    Last error:       Socket: Connection refused\n");
  });

  it("rejects 8xxx and 9xxx replies with BIRD's code and message", async () => {
    const bird = client((await fakeBird()).path);
    const error = await bird.command("show nonsense").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BirdError);
    expect(error).toMatchObject({ code: "bird_command_failed", birdCode: 9001, message: "show nonsense: syntax error, unexpected CF_SYM_UNDEFINED" });
    // The connection stays usable after an error reply.
    await expect(bird.command("configure check")).resolves.toMatchObject({ code: 20, text: "Reading configuration from bird.conf\nConfiguration OK" });
  });

  it("queues commands and matches each reply to its command, even when bytes arrive one by one", async () => {
    const fake = await fakeBird((command, socket) => {
      const reply = CAPTURED[command];
      if (!reply) return false;
      const bytes = [...reply];
      const next = () => {
        const ch = bytes.shift();
        if (ch !== undefined) socket.write(ch, () => setImmediate(next));
      };
      next();
      return true;
    });
    const bird = client(fake.path);
    const [a, b, c] = await Promise.all([bird.command("show status"), bird.command("configure check"), bird.command("show status")]);
    expect([a.code, b.code, c.code]).toEqual([13, 20, 13]);
    expect(fake.connections).toBe(1);
  });

  it("skips asynchronous `+` lines between replies", async () => {
    const fake = await fakeBird((command, socket) => {
      if (command !== "configure check") return false;
      socket.write("+ some log message\n");
      socket.write(CAPTURED[command] ?? "");
      return true;
    });
    await expect(client(fake.path).command("configure check")).resolves.toMatchObject({ code: 20 });
  });

  it("times out a command that gets no answer, drops the connection and reconnects for the next", async () => {
    const fake = await fakeBird((command) => command === "show protocols");
    const bird = client(fake.path, 200);
    const error = await bird.command("show protocols").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "bird_timeout" });
    await expect(bird.command("show status")).resolves.toMatchObject({ code: 13 });
    expect(fake.connections).toBe(2);
  });

  it("fails with bird_unavailable when the socket does not exist", async () => {
    const error = await client("/nonexistent/bird.ctl")
      .command("show status")
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "BirdError", code: "bird_unavailable" });
  });

  it("fails the command in flight when BIRD closes the connection", async () => {
    const fake = await fakeBird((command, socket) => {
      if (command !== "down") return false;
      socket.end("0007 Shutdown requested\n".slice(0, 10));
      return true;
    });
    const error = await client(fake.path)
      .command("down")
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "bird_unavailable" });
  });

  it("refuses a command that is more than one line", async () => {
    const fake = await fakeBird();
    const error = await client(fake.path)
      .command("show status\nconfigure")
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "bird_protocol" });
    expect(fake.received).toEqual([]);
  });
});
