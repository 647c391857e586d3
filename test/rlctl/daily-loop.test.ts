import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleLab, startConsoleLab } from "../helpers/console-lab.js";
import { until } from "../helpers/live-controller.js";
import { tool } from "../helpers/tools.js";
import { ensureRlctlBuilt, rlctl, rlctlOk, startRlctl, tempHome } from "./run-rlctl.js";

// The operator's daily loop with rlctl, as docs/rlctl.md's example session runs it, against a real
// controller, an enrolled rl-agent driving BIRD, and GoBGP as BIRD's peer (the console lab):
// a module and its entries, a refresh, the diff of two revisions, an apply followed speaker by
// speaker, the BGP session up in `speakers status`, then the jobs and the audit journal.

const missing = ["bird", "birdc", "gobgpd", "gobgp"].filter((bin) => !tool(bin).available);
const title = "rlctl: the daily loop against a controller, rl-agent, BIRD and GoBGP";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

describe.skipIf(missing.length > 0)(missing.length > 0 ? `${title} (skipped: ${missing.join(", ")} not on PATH)` : title, () => {
  let lab: ConsoleLab;
  const home = tempHome();
  let env: Record<string, string>;
  const run = (...args: string[]) => rlctlOk(home.home, args, env);

  beforeAll(async () => {
    ensureRlctlBuilt();
    lab = await startConsoleLab({ NATS_URL: natsUrl });
    env = { RL_URL: lab.t.url, RL_API_KEY: lab.t.rootKey };
  }, 180_000);

  afterAll(async () => {
    await lab?.close();
    home.remove();
  }, 60_000);

  it("module, entries, CSV import, refresh, diff, apply, speakers status, jobs and audit", async () => {
    await run("communities", "add", "65000:100", "--title", "streaming");
    const created = await run("modules", "add", "streaming", "--type", "ip", "--community", "65000:100");
    expect(created.stdout).toMatch(/^ID\s+NAME\s+TYPE\s+ENABLED\s+RPKI\s+ACTION\s+REFRESHED\s+ERROR\n[0-9a-f-]{36}\s+streaming\s+IP_RANGES\s+true\s/);

    const added = await run("entries", "add", "streaming", "11.1.0.0/16", "2a00:1::/32", "--comment", "by hand");
    expect(added.stdout).toMatch(/^ID\s+VALUE\s+COMMENT\n/);
    expect(added.stdout).toMatch(/11\.1\.0\.0\/16\s+by hand/);
    expect(added.stdout).toMatch(/2a00:1::\/32\s+by hand/);

    // The first refresh: its job's progress comes as lines on stderr (no terminal), the job on stdout.
    const first = await run("refresh", "streaming");
    expect(first.stderr).toMatch(/^module_ingest [0-9a-f]{8} succeeded \[#{24}\] 1\/1 100%$/m);
    expect(first.stderr).not.toContain("\r");
    expect(first.stdout).toMatch(/^ID\s+TYPE\s+STATUS\s+PROGRESS\s+CREATED\s+ERROR\n[0-9a-f-]{36}\s+module_ingest\s+succeeded\s/);

    const csv = join(home.home, "more.csv");
    writeFileSync(csv, "cidr,comment\n11.3.0.0/16,from the csv\n2a00:5::/32,from the csv\n");
    const imported = await run("entries", "import", "streaming", csv);
    expect(imported.stdout).toMatch(/^CREATED\s+UPDATED\s+DELETED\s+UNCHANGED\s+ERRORS\n2\s+0\s+0\s+0\s+0\n$/);
    expect((await run("entries", "ls", "streaming")).stdout.trimEnd().split("\n")).toHaveLength(5);

    await run("refresh", "streaming");
    const revisions = JSON.parse((await run("revisions", "ls", "-o", "json")).stdout) as { revision_id: number; is_current: boolean }[];
    const [current, previous] = revisions;
    expect(current!.is_current).toBe(true);
    const diff = await run("revisions", "diff", String(previous!.revision_id), String(current!.revision_id));
    expect(diff.stdout).toContain(`revision ${previous!.revision_id} → ${current!.revision_id}\n`);
    expect(diff.stdout).toMatch(/^\+ 11\.3\.0\.0\/16\s+65000:100$/m);
    expect(diff.stdout).toMatch(/^\+ 2a00:5::\/32\s+65000:100$/m);
    expect(diff.stdout).not.toContain("11.1.0.0/16");
    expect(diff.stdout).toMatch(/^2 added, 0 removed, 0 changed$/m);
    // `previous` and `current` name the same two revisions.
    expect((await run("revisions", "diff", "previous", "current")).stdout).toBe(diff.stdout);

    const applied = await run("apply");
    expect(applied.stderr).toMatch(/^apply job [0-9a-f-]{36}$/m);
    expect(applied.stderr).toMatch(/^edge-lab {2}applied$/m);
    expect(applied.stdout).toMatch(/^SPEAKER\s+STATUS\s+ERROR\nedge-lab\s+applied\s+-$/m);

    // The agent reports GoBGP's session once BIRD has the revision.
    const established = await until(
      "speakers status to show the session Established",
      async () => {
        const r = await rlctl(home.home, ["speakers", "status"], env);
        return r.code === 0 && /\bEstablished\b/.test(r.stdout) ? r : null;
      },
      60_000,
      500,
    );
    const [header, row] = established.stdout.split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["SPEAKER", "SYNC", "REV", "AGENT", "BIRD", "SESSION", "NEIGHBOR", "STATE", "BGP", "SINCE", "ROUTES IN/OUT"]);
    expect(row).toMatch(
      new RegExp(`^edge-lab\\s+in_sync\\s+${current!.revision_id}\\s+live\\s+\\d+\\.\\d+\\.\\d+\\s+\\S+\\s+127\\.0\\.0\\.2 AS65001\\s+up\\s+Established\\s`),
    );

    // --watch with --count stops by itself: two tables, one after the other, each with its time line.
    const watched = await run("speakers", "status", "--watch", "--interval", "1", "--count", "2");
    const tables = watched.stdout.split(/^\d{4}-\d\d-\d\dT\S+Z {2}1 speaker\(s\), 1 session\(s\)\n/m).filter(Boolean);
    expect(tables).toHaveLength(2);
    for (const t of tables) expect(t).toMatch(/^SPEAKER\s+SYNC\s.*\nedge-lab\s.*\bEstablished\b/);

    // Without --count, Ctrl-C ends the watch after its tables; there is no job to leave running, so exit 0.
    const watching = startRlctl(home.home, ["speakers", "status", "--watch", "--interval", "1"], env);
    await until("a first table of the watch", async () => /\bEstablished\b/.test(watching.stdout()), 20_000, 50);
    watching.signal("SIGINT");
    const stopped = await watching.done;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toMatch(/^SPEAKER\s+SYNC\s.*\nedge-lab\s.*\bEstablished\b/m);

    const jobs = await run("jobs", "ls");
    expect(jobs.stdout).toMatch(/^ID\s+TYPE\s+STATUS\s+PROGRESS\s+CREATED\s+ERROR\n/);
    expect(jobs.stdout).toMatch(/^[0-9a-f-]{36}\s+apply\s+succeeded\s/m);
    expect(jobs.stdout.match(/^[0-9a-f-]{36}\s+module_ingest\s+succeeded\s/gm)).toHaveLength(2);

    const audit = await run("audit", "--resource", "module");
    expect(audit.stdout).toMatch(/^AT\s+ACTOR\s+ACTION\s+RESOURCE\s+SEVERITY\s+SUMMARY\n/);
    expect(audit.stdout).toMatch(/\bcreate\s+module [0-9a-f-]{36}\s/);
    const applies = JSON.parse((await run("audit", "--action", "apply", "-o", "json")).stdout) as { action: string }[];
    expect(applies.length).toBeGreaterThan(0);
    expect(applies.every((r) => r.action === "apply")).toBe(true);
  }, 180_000);
});
