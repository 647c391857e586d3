import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { stringify as toYaml } from "yaml";
import { listCommand, withContext } from "../command-kit.js";
import { type Ctx, positiveInt } from "../context.js";
import { coloured } from "../follow-job.js";
import { type Column, print, table } from "../output.js";

type Speaker = Schema<"Speaker">;
type Session = Schema<"BgpSessionLive">;
interface Row {
  speaker: Speaker;
  session: Session | null;
}

const speakerColumns = (ctx: Ctx): Column<Speaker>[] => [
  { header: "ID", value: (s) => s.id },
  { header: "NAME", value: (s) => s.name },
  { header: "MODE", value: (s) => s.mode },
  { header: "SYNC", value: (s) => coloured(ctx, s.sync_status) },
  { header: "DESIRED", value: (s) => s.desired_revision_id },
  { header: "APPLIED", value: (s) => s.applied_revision_id },
  { header: "LAST SEEN", value: (s) => s.last_seen_at },
  // Which agents are older than the controller (agent_older), or speak only rl-bundle/1 (agent_outdated).
  { header: "AGENT", value: (s) => s.agent_version },
  { header: "WARNINGS", value: (s) => s.warnings.map((w) => w.code).join(",") || null },
];

const sessionColumns = (ctx: Ctx): Column<Row>[] => [
  { header: "SPEAKER", value: (r) => r.speaker.name },
  { header: "SYNC", value: (r) => coloured(ctx, r.speaker.sync_status) },
  { header: "REV", value: (r) => r.speaker.live?.revision_id ?? r.speaker.applied_revision_id },
  { header: "AGENT", value: (r) => (r.speaker.live?.reachable ? "live" : r.speaker.live?.stale ? "stale" : "-") },
  // Which BIRD the agent drives: 2.x and 3.x differ (probation, bird -p's messages).
  { header: "BIRD", value: (r) => r.speaker.live?.bird?.version },
  { header: "SESSION", value: (r) => r.session?.protocol },
  { header: "NEIGHBOR", value: (r) => (r.session ? `${r.session.neighbor_address ?? "-"} AS${r.session.remote_asn ?? "?"}` : null) },
  { header: "STATE", value: (r) => (r.session ? coloured(ctx, r.session.state) : null) },
  { header: "BGP", value: (r) => r.session?.bgp_state },
  { header: "SINCE", value: (r) => r.session?.since },
  { header: "ROUTES IN/OUT", value: (r) => (r.session ? `${r.session.routes_imported ?? "-"}/${r.session.routes_exported ?? "-"}` : null) },
];

/** One row per session of each speaker (a speaker without sessions still gets one). */
async function sessionRows(ctx: Ctx, pollMs: number): Promise<{ speakers: Speaker[]; rows: Row[] }> {
  const page = await unwrap(ctx.client.GET("/v1/speakers", { params: { query: { limit: 500, live: "true", live_timeout_ms: pollMs } } }));
  const rows = page.items.flatMap((speaker): Row[] => {
    const sessions = speaker.live?.sessions ?? [];
    return sessions.length ? sessions.map((session) => ({ speaker, session })) : [{ speaker, session: null }];
  });
  return { speakers: page.items, rows };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function speakersCommand(program: Command): void {
  const speakers = program.command("speakers").alias("speaker").description("BGP speakers (routers with an agent): ls, status");

  listCommand(speakers, "ls", {
    description: "list speakers with their sync state",
    page: (ctx, query) => ctx.client.GET("/v1/speakers", { params: { query } }),
    columns: speakerColumns,
  });

  speakers
    .command("status")
    .description("the BGP sessions of every speaker, as their agents report them now (silent agents: their last report, marked stale)")
    .option("-w, --watch", "redraw every --interval seconds until Ctrl-C")
    .option("--interval <seconds>", "seconds between redraws", positiveInt("--interval"), 2)
    .option("--count <n>", "with --watch: stop after n tables", positiveInt("--count"))
    .option("--poll-timeout <ms>", "how long to wait for the agents' answers", positiveInt("--poll-timeout"), 1000)
    .action(
      withContext(async (ctx, opts: { watch?: boolean; interval: number; count?: number; pollTimeout: number }) => {
        const o = ctx.output;
        const pollMs = Math.min(10_000, Math.max(100, opts.pollTimeout));
        if (!opts.watch) {
          const { speakers: items, rows } = await sessionRows(ctx, pollMs);
          return print(o, items, rows, sessionColumns(ctx));
        }
        let stop = false;
        const onSigint = () => {
          stop = true;
        };
        process.once("SIGINT", onSigint);
        try {
          for (let n = 1; !stop; n++) {
            const { speakers: items, rows } = await sessionRows(ctx, pollMs);
            // json: one line a refresh (NDJSON); yaml: one document a refresh.
            if (o.format === "json") o.out(`${JSON.stringify(items)}\n`);
            else if (o.format === "yaml") o.out(`---\n${toYaml(items)}`);
            else {
              const body = `${new Date().toISOString()}  ${items.length} speaker(s), ${rows.filter((r) => r.session).length} session(s)\n${table(rows, sessionColumns(ctx))}\n`;
              // A terminal is redrawn in place; a pipe or a file gets one table after another.
              o.out(process.stdout.isTTY ? `\x1b[H\x1b[2J${body}` : `${body}\n`);
            }
            if (opts.count && n >= opts.count) break;
            const until = Date.now() + opts.interval * 1000;
            while (!stop && Date.now() < until) await sleep(50);
          }
        } finally {
          process.off("SIGINT", onSigint);
        }
      }),
    );
}
