import type { ReportedSession } from "../../schemas/index.js";
import { peerIdFromProtocol } from "../render/values.js";

/** One BGP session as the live status reports it (`BgpSessionLive` of the API, route counts always given). */
export type BgpSessionLive = ReportedSession;

/** The summary line BIRD prints for every protocol. */
export interface ProtocolSummary {
  name: string;
  proto: string;
  table: string;
  state: string;
  since: string | null;
  info: string;
}

export interface ParseOptions {
  /** Completes BIRD's time-only "since" (its default format for the last 20 hours). */
  now: Date;
  /**
   * The zone BIRD prints times in: its host's local time. The agent runs on the same host, so
   * `local` (default) is right unless BIRD runs with another TZ.
   */
  timeZone?: "local" | "utc";
}

export interface ParsedProtocols {
  protocols: ProtocolSummary[];
  sessions: BgpSessionLive[];
}

interface Current {
  summary: ProtocolSummary;
  session: BgpSessionLive | null;
}

type Handler = { re: RegExp; apply: (m: RegExpExecArray, current: Current | null, out: ParsedProtocols, o: ParseOptions) => Current | null };

// `timeformat protocol iso long` gives "2026-11-22 04:15:30", BIRD's default "04:15:30.682"
// today and "2026-11-21" before; the column may hold a space, so it is matched, not split.
const SINCE = String.raw`(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?|\d{4}-\d{2}-\d{2})`;

/**
 * Line handlers, tried in order, the first match wins (bird_exporter's parser/parser.go
 * layout). The regexes are compiled once; the handlers keep no state of their own.
 */
const HANDLERS: readonly Handler[] = [
  { re: /^BIRD \S+ ready\.$|^Name\s+Proto\s+Table\s+State\s+Since\s+Info/, apply: (_m, c) => c },
  {
    re: new RegExp(String.raw`^(\S+)\s+(\S+)\s+(\S+)\s+([a-z]+)\s+${SINCE}(?:\s+(.*?))?\s*$`),
    apply: (m, _c, out, o) => {
      const summary: ProtocolSummary = {
        name: m[1] as string,
        proto: m[2] as string,
        table: m[3] as string,
        state: m[4] as string,
        since: parseSince(m[5] as string, o),
        info: m[6] ?? "",
      };
      out.protocols.push(summary);
      if (summary.proto !== "BGP") return { summary, session: null };
      // The summary's info is "<BGP state> <error>"; the detail lines below refine both.
      const [bgpState, ...rest] = summary.info.split(/\s+/).filter(Boolean);
      const session: BgpSessionLive = {
        protocol: summary.name,
        peer_id: peerIdFromProtocol(summary.name),
        neighbor_address: null,
        remote_asn: null,
        state: summary.state,
        bgp_state: bgpState ?? null,
        since: summary.since,
        routes_imported: 0,
        routes_exported: 0,
        last_error: rest.length > 0 ? rest.join(" ") : null,
      };
      out.sessions.push(session);
      return { summary, session };
    },
  },
  { re: /^\s+BGP state:\s+(\S+)/, apply: onSession((s, m) => (s.bgp_state = m[1] as string)) },
  { re: /^\s+Neighbor address:\s+(\S+)/, apply: onSession((s, m) => (s.neighbor_address = m[1] as string)) },
  { re: /^\s+Neighbor AS:\s+(\d+)/, apply: onSession((s, m) => (s.remote_asn = Number(m[1]))) },
  { re: /^\s+Last error:\s+(.*?)\s*$/, apply: onSession((s, m) => (s.last_error = m[1] || null)) },
  {
    // "Routes: 1 imported, 3 exported, 0 preferred", with "N filtered, " under import keep filtered.
    re: /^\s+Routes:\s+(\d+) imported, (?:\d+ filtered, )?(\d+) exported/,
    apply: onSession((s, m) => {
      s.routes_imported += Number(m[1]);
      s.routes_exported += Number(m[2]);
    }),
  },
];

/** A handler for a detail line of a BGP protocol; detail lines of other protocols are ignored. */
function onSession(set: (session: BgpSessionLive, m: RegExpExecArray) => void): Handler["apply"] {
  return (m, current) => {
    if (current?.session) set(current.session, m);
    return current;
  };
}

/** Parses `birdc show protocols all` text (as birdc prints it, or as the text of a BirdClient reply). */
export function parseProtocolsAll(text: string, options: ParseOptions): ParsedProtocols {
  const out: ParsedProtocols = { protocols: [], sessions: [] };
  let current: Current | null = null;
  for (const line of text.split("\n")) {
    for (const handler of HANDLERS) {
      const m = handler.re.exec(line);
      if (m) {
        current = handler.apply(m, current, out, options);
        break;
      }
    }
  }
  return out;
}

function parseSince(text: string, o: ParseOptions): string | null {
  const m = /^(?:(\d{4})-(\d{2})-(\d{2}))? ?(?:(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?)?$/.exec(text);
  if (!m) return null;
  const utc = o.timeZone === "utc";
  const now = o.now;
  const [y, mo, d] = m[1]
    ? [Number(m[1]), Number(m[2]) - 1, Number(m[3])]
    : utc
      ? [now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()]
      : [now.getFullYear(), now.getMonth(), now.getDate()];
  const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, "0")) : 0;
  let at = utc ? Date.UTC(y, mo, d, h, mi, s, ms) : new Date(y, mo, d, h, mi, s, ms).getTime();
  // A time-only value later than now was printed yesterday (BIRD shows times for 20 hours).
  if (!m[1] && at > now.getTime() + 1000) at -= 24 * 60 * 60 * 1000;
  return Number.isNaN(at) ? null : new Date(at).toISOString();
}

/**
 * One channel of a BIRD protocol as `show protocols all` prints it, with what bird_exporter
 * puts in its labels (`ip_version`, `import_filter`, `export_filter`) and its route counts.
 */
export interface ProtocolChannel {
  /** `4` or `6`; empty for a protocol without a channel (device). */
  ip_version: string;
  /** BIRD's `Input filter:` (`ACCEPT`, `REJECT`, `(unnamed)` or a filter's name). */
  import_filter: string;
  /** BIRD's `Output filter:`. */
  export_filter: string;
  imported: number;
  exported: number;
  filtered: number;
  preferred: number;
}

type ChannelLine = { re: RegExp; apply: (m: RegExpExecArray, channels: ProtocolChannel[]) => void };
const onChannel = (set: (c: ProtocolChannel, m: RegExpExecArray) => void) => (m: RegExpExecArray, channels: ProtocolChannel[]) => {
  const channel = channels.at(-1);
  if (channel) set(channel, m);
};

/** The lines of a channel, read before the protocol's own: `Channel ipvN` starts one, the filter and route lines fill it in. */
const CHANNEL_LINES: readonly ChannelLine[] = [
  {
    re: /^\s+Channel ipv(4|6)\b/,
    apply: (m, channels) =>
      void channels.push({ ip_version: m[1] as string, import_filter: "", export_filter: "", imported: 0, exported: 0, filtered: 0, preferred: 0 }),
  },
  { re: /^\s+Input filter:\s+(.*?)\s*$/, apply: onChannel((c, m) => (c.import_filter = m[1] as string)) },
  { re: /^\s+Output filter:\s+(.*?)\s*$/, apply: onChannel((c, m) => (c.export_filter = m[1] as string)) },
  {
    re: /^\s+Routes:\s+(\d+) imported, (?:(\d+) filtered, )?(\d+) exported(?:, (\d+) preferred)?/,
    apply: onChannel((c, m) => {
      c.imported = Number(m[1]);
      c.filtered = Number(m[2] ?? 0);
      c.exported = Number(m[3]);
      c.preferred = Number(m[4] ?? 0);
    }),
  },
];

/**
 * Each protocol's channels (by protocol name) from `birdc show protocols all` text, for the
 * agent's metrics: the protocols as parseProtocolsAll finds them, each with the channel lines
 * under it.
 */
export function parseProtocolChannels(text: string): Map<string, ProtocolChannel[]> {
  const out = new Map<string, ProtocolChannel[]>();
  const parsed: ParsedProtocols = { protocols: [], sessions: [] };
  const options: ParseOptions = { now: new Date(), timeZone: "utc" };
  let current: Current | null = null;
  let channels: ProtocolChannel[] = [];
  for (const line of text.split("\n")) {
    const known = parsed.protocols.length;
    const channelLine = CHANNEL_LINES.find((c) => c.re.test(line));
    if (channelLine) {
      if (current) channelLine.apply(channelLine.re.exec(line) as RegExpExecArray, channels);
      continue;
    }
    for (const handler of HANDLERS) {
      const m = handler.re.exec(line);
      if (m) {
        current = handler.apply(m, current, parsed, options);
        break;
      }
    }
    // A summary line started the next protocol.
    if (current && parsed.protocols.length > known) {
      channels = [];
      out.set(current.summary.name, channels);
    }
  }
  return out;
}
