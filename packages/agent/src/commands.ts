import type { BgpSessionLiveJson, BirdInfoJson } from "@rlc/proto";
import { type BirdControl, parseProtocolsAll, parseShowStatus } from "@rlc/shared/bird";
import type { StateStore } from "./state.js";

// The output of `rl-agent status` and `rl-agent protocols`: text for a person at the router,
// `--json` for scripts. Never the node key.

export interface CommandDeps {
  bird: BirdControl;
  now: Date;
  timeZone?: "local" | "utc";
}

/** `rl-agent protocols`: BIRD's BGP sessions as the agent reports them. */
export async function protocolsCommand(deps: CommandDeps, options: { json: boolean }): Promise<string> {
  const reply = await deps.bird.command("show protocols all");
  const { sessions } = parseProtocolsAll(reply.text, { now: deps.now, timeZone: deps.timeZone });
  if (options.json) return `${JSON.stringify({ sessions }, null, 2)}\n`;
  return formatSessions(sessions);
}

export function formatSessions(sessions: readonly BgpSessionLiveJson[]): string {
  const header = ["PROTOCOL", "PEER", "NEIGHBOR", "AS", "STATE", "BGP STATE", "SINCE", "IMPORTED", "EXPORTED", "LAST ERROR"];
  const rows = sessions.map((s) => [
    s.protocol,
    s.peer_id ?? "-",
    s.neighbor_address ?? "-",
    s.remote_asn === null ? "-" : String(s.remote_asn),
    s.state,
    s.bgp_state ?? "-",
    s.since ?? "-",
    String(s.routes_imported),
    String(s.routes_exported),
    s.last_error ?? "-",
  ]);
  if (rows.length === 0) return "no BGP sessions\n";
  return table([header, ...rows]);
}

/**
 * `rl-agent status` exit codes, for Nagios-style and systemd checks:
 * 0 in sync (enrolled, BIRD answers, a bundle applied, every BGP session established);
 * 1 degraded or out of sync (nothing applied yet, or a BGP session not established);
 * 2 not enrolled, or BIRD not answering (the agent cannot do its job at all).
 */
export const STATUS_EXIT = { inSync: 0, degraded: 1, down: 2 } as const;

export function statusExitCode(status: {
  enrolled: boolean;
  applied: unknown;
  bird: { reachable: boolean };
  sessions: { total: number; established: number };
}): number {
  if (!status.enrolled || !status.bird.reachable) return STATUS_EXIT.down;
  if (!status.applied || status.sessions.established < status.sessions.total) return STATUS_EXIT.degraded;
  return STATUS_EXIT.inSync;
}

/** `rl-agent status` with its exit code (see {@link statusExitCode}). */
export async function statusWithExitCode(deps: CommandDeps & { state: StateStore }, options: { json: boolean }): Promise<{ text: string; code: number }> {
  let code: number = STATUS_EXIT.down;
  const text = await statusCommand(deps, options, (c) => {
    code = c;
  });
  return { text, code };
}

/** `rl-agent status`: enrollment, what BIRD runs from the agent, and whether BIRD answers. */
export async function statusCommand(
  deps: CommandDeps & { state: StateStore },
  options: { json: boolean },
  onExitCode: (code: number) => void = () => {},
): Promise<string> {
  const [node, applied, keys] = await Promise.all([deps.state.readNode(), deps.state.readApplied(), deps.state.readSigningKeys()]);
  let bird: BirdInfoJson & { error?: string } = { reachable: false, version: null, router_id: null, server_time: null, last_reconfiguration: null };
  let sessions: BgpSessionLiveJson[] = [];
  try {
    bird = parseShowStatus((await deps.bird.command("show status")).text, { timeZone: deps.timeZone });
    sessions = parseProtocolsAll((await deps.bird.command("show protocols all")).text, { now: deps.now, timeZone: deps.timeZone }).sessions;
  } catch (error) {
    bird = { ...bird, error: (error as Error).message };
  }
  const established = sessions.filter((s) => s.bgp_state === "Established").length;
  const status = {
    enrolled: node !== null,
    speaker_id: node?.speaker_id ?? null,
    tenant_id: node?.tenant_id ?? null,
    enrolled_at: node?.enrolled_at ?? null,
    applied,
    signing_keys: keys.map((k) => ({ key_id: k.key_id, status: k.status })),
    bird,
    sessions: { total: sessions.length, established },
  };
  onExitCode(statusExitCode(status));
  if (options.json) return `${JSON.stringify(status, null, 2)}\n`;
  const lines: [string, string][] = [
    ["speaker", node ? `${node.speaker_id} (tenant ${node.tenant_id}, enrolled ${node.enrolled_at})` : "not enrolled"],
    ["applied", applied ? `revision ${applied.revision_id}, sequence ${applied.sequence}, at ${applied.applied_at}` : "nothing yet"],
    ["digest", applied?.digest ?? "-"],
    ["signing keys", keys.map((k) => `${k.key_id} (${k.status})`).join(", ") || "none pinned"],
    [
      "bird",
      bird.reachable
        ? `up, BIRD ${bird.version ?? "?"}, router id ${bird.router_id ?? "?"}, last reconfiguration ${bird.last_reconfiguration ?? "?"}`
        : `not answering: ${bird.error ?? "?"}`,
    ],
    ["sessions", `${sessions.length} BGP, ${established} established`],
  ];
  return table(lines, "  ");
}

/** Left-aligned columns; trailing spaces trimmed. */
function table(rows: readonly (readonly string[])[], gap = "  "): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map(
      (row) =>
        `${row
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join(gap)
          .trimEnd()}\n`,
    )
    .join("");
}
