import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/bird-lab.js";
import { startFeedServer } from "../helpers/feeds.js";
import { type LiveController, startLiveController, until } from "../helpers/live-controller.js";
import { ensureRlctlBuilt, rlctl, rlctlOk, startRlctl, tempHome, untilStderr } from "./run-rlctl.js";

// What rlctl answers when things go wrong, by exit code (rlctl --help and docs/rlctl.md list them):
// a misused command line, a missing or refused key, something that does not exist, input the
// controller refuses, and Ctrl-C while following a job, which leaves the job running.

describe("rlctl exit codes and errors", () => {
  let t: LiveController;
  let feeds: Awaited<ReturnType<typeof startFeedServer>>;
  const home = tempHome();
  let env: Record<string, string>;

  beforeAll(async () => {
    ensureRlctlBuilt();
    feeds = await startFeedServer();
    // The stalled feed is on loopback, which outbound fetches refuse unless allowed.
    t = await startLiveController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" } });
    env = { RL_URL: t.url, RL_API_KEY: t.rootKey };
    await rlctlOk(home.home, ["modules", "add", "edge", "--type", "ip"], env);
  });

  afterAll(async () => {
    await t?.close();
    await feeds?.close();
    home.remove();
  });

  it("exits 2 with the usage hint for an unknown command, an unknown option, a missing argument or a bad -o", async () => {
    const cases: [string[], RegExp][] = [
      [["bogus"], /error: unknown command 'bogus'/],
      [["modules", "ls", "--bogus"], /error: unknown option '--bogus'/],
      [["modules", "add", "x"], /error: required option '--type <type>' not specified/],
      [["entries", "add"], /error: missing required argument 'module'/],
    ];
    for (const [args, message] of cases) {
      const r = await rlctl(home.home, args, env);
      expect(r.code, `rlctl ${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain("(rlctl --help lists the commands)");
      expect(r.stdout).toBe("");
    }
    const format = await rlctl(home.home, ["modules", "ls", "-o", "xml"], env);
    expect(format.code).toBe(2);
    expect(format.stderr).toBe("rlctl: -o xml: choose table, json or yaml\n");

    const help = await rlctl(home.home, ["--help"], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: rlctl \[options\] \[command\]/);
    expect(help.stdout).toContain("Exit codes:");
    expect(help.stdout).toMatch(/130 {2}interrupted \(Ctrl-C\); a followed job keeps running/);
  });

  it("exits 3 without a key, with a key the controller refuses, and with a role too low", async () => {
    const none = await rlctl(home.home, ["modules", "ls"], { RL_URL: t.url });
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(`rlctl: no API key for ${t.url} (RL_URL)`);

    const wrong = await rlctl(home.home, ["modules", "ls"], { RL_URL: t.url, RL_API_KEY: "rlk_nosuchkey_0123456789abcdef" });
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/^rlctl: 401 /);

    const viewer = (await t.call(t.rootKey, "POST", "/v1/api-keys", { name: "viewer", role: "viewer" })).json();
    const low = await rlctl(home.home, ["modules", "add", "nope", "--type", "ip"], { RL_URL: t.url, RL_API_KEY: viewer.secret });
    expect(low.code).toBe(3);
    expect(low.stderr).toMatch(/^rlctl: 403 /);
  });

  it("exits 4 for a module, job or revision that does not exist", async () => {
    const mod = await rlctl(home.home, ["modules", "show", "nosuch"], env);
    expect(mod.code).toBe(4);
    expect(mod.stderr).toBe("rlctl: no module named nosuch\n");

    const job = await rlctl(home.home, ["jobs", "show", "00000000-0000-4000-8000-000000000000"], env);
    expect(job.code).toBe(4);
    expect(job.stderr).toMatch(/^rlctl: 404 /);

    const revision = await rlctl(home.home, ["revisions", "show", "9999"], env);
    expect(revision.code).toBe(4);
    expect(revision.stderr).toMatch(/^rlctl: 404 /);
  });

  it("exits 5 when the controller refuses the input, with the problem's detail on stderr", async () => {
    const bad = await rlctl(home.home, ["entries", "add", "edge", "not-a-prefix"], env);
    expect(bad.code).toBe(5);
    const problem = (await t.call(t.rootKey, "POST", `/v1/modules/${await moduleId("edge")}/ip-range-entries`, { cidr: "not-a-prefix" })).json();
    expect(bad.stderr).toContain(`rlctl: ${problem.status} ${problem.code}: ${problem.detail}`);

    const twice = await rlctl(home.home, ["modules", "add", "edge", "--type", "ip"], env);
    expect(twice.code).toBe(5);
    expect(twice.stderr).toMatch(/^rlctl: 409 /);
  });

  it("exits 7 when the controller cannot be reached", async () => {
    // A port that was free a moment ago: nothing listens there.
    const r = await rlctl(home.home, ["modules", "ls"], { RL_URL: `http://127.0.0.1:${await freePort()}`, RL_API_KEY: t.rootKey });
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/^rlctl: cannot reach the controller: ECONNREFUSED/);
  });

  it("Ctrl-C while refresh follows its job exits 130, says how to follow it, and leaves the job running", async () => {
    await rlctlOk(home.home, ["modules", "add", "stalled", "--type", "ip"], env);
    feeds.routes.set("/stall.txt", "hang");
    await rlctlOk(home.home, ["cdn-sources", "add", "stalled", `${feeds.base}/stall.txt`], env);

    const run = startRlctl(home.home, ["refresh", "stalled"], env);
    // The first progress line: the job is accepted and rlctl is following it.
    await untilStderr(run, /^module_ingest \w{8} /m);
    await until("the refresh to fetch the stalled feed", async () => (feeds.hits.get("/stall.txt") ?? 0) > 0, 20_000);
    run.signal("SIGINT");
    const r = await run.done;
    expect(r.code).toBe(130);
    const said = r.stderr.match(/rlctl: stopped following; job (\S+) keeps running\. Follow it with: rlctl jobs watch \1 \(cancel: rlctl jobs cancel \1\)/);
    expect(said, r.stderr).not.toBeNull();

    const jobId = said![1]!;
    const job = (await t.call(t.rootKey, "GET", `/v1/jobs/${jobId}`)).json();
    expect(job).toMatchObject({ type: "module_ingest", status: "running" });
    const cancelled = await rlctl(home.home, ["jobs", "cancel", jobId, "-o", "json"], env);
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ job_id: jobId, cancel_requested: true });
  });

  async function moduleId(name: string): Promise<string> {
    const r = await rlctlOk(home.home, ["modules", "show", name, "-o", "json"], env);
    return JSON.parse(r.stdout).id;
  }
});
