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
  /** BIRD 3's `Created:` line: when the protocol was first configured (absent on BIRD 2). */
  created?: string | null;
}

/**
 * One channel (`Channel ipv4`) of a protocol. BIRD 3 splits its state into import and export
 * (`Import state: UP`, `Export state: READY`, or `FEEDING` while it still sends the table);
 * BIRD 2 prints the one `State:`, and both are null there.
 */
export interface ChannelStatus {
  protocol: string;
  channel: string;
  state: string;
  import_state: string | null;
  export_state: string | null;
  /** `Input filter:` / `Output filter:` (`ACCEPT`, `REJECT`, `(unnamed)` or a filter's name); empty when not printed. */
  import_filter: string;
  export_filter: string;
  routes_imported: number;
  routes_exported: number;
  /** `N filtered` (under `import keep filtered`) and `N preferred` of the `Routes:` line; 0 when not printed. */
  routes_filtered: number;
  routes_preferred: number;
  /** BIRD 3's BGP `Pending N attribute sets with total M prefixes to send`: M, the routes not on the wire yet; null elsewhere. */
  pending_prefixes: number | null;
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
  /** Every protocol's channels, in BIRD's order. */
  channels: ChannelStatus[];
}

interface Current {
  summary: ProtocolSummary;
  session: BgpSessionLive | null;
  channel: ChannelStatus | null;
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
      if (summary.proto !== "BGP") return { summary, session: null, channel: null };
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
      return { summary, session, channel: null };
    },
  },
  {
    re: new RegExp(String.raw`^\s+Created:\s+${SINCE}\s*$`),
    apply: (m, c, _out, o) => {
      if (c) c.summary.created = parseSince(m[1] as string, o);
      return c;
    },
  },
  {
    re: /^\s+Channel (\S+)\s*$/,
    apply: (m, c, out) => {
      if (!c) return c;
      const channel: ChannelStatus = {
        protocol: c.summary.name,
        channel: m[1] as string,
        state: "",
        import_state: null,
        export_state: null,
        import_filter: "",
        export_filter: "",
        routes_imported: 0,
        routes_exported: 0,
        routes_filtered: 0,
        routes_preferred: 0,
        pending_prefixes: null,
      };
      out.channels.push(channel);
      return { ...c, channel };
    },
  },
  { re: /^\s+State:\s+(\S+)/, apply: onChannel((ch, m) => (ch.state = m[1] as string)) },
  { re: /^\s+Input filter:\s+(.*?)\s*$/, apply: onChannel((ch, m) => (ch.import_filter = m[1] as string)) },
  { re: /^\s+Output filter:\s+(.*?)\s*$/, apply: onChannel((ch, m) => (ch.export_filter = m[1] as string)) },
  { re: /^\s+Import state:\s+(\S+)/, apply: onChannel((ch, m) => (ch.import_state = m[1] as string)) },
  { re: /^\s+Export state:\s+(\S+)/, apply: onChannel((ch, m) => (ch.export_state = m[1] as string)) },
  { re: /^\s+Pending \d+ attribute sets with total (\d+) prefixes to send/, apply: onChannel((ch, m) => (ch.pending_prefixes = Number(m[1]))) },
  { re: /^\s+BGP state:\s+(\S+)/, apply: onSession((s, m) => (s.bgp_state = m[1] as string)) },
  { re: /^\s+Neighbor address:\s+(\S+)/, apply: onSession((s, m) => (s.neighbor_address = m[1] as string)) },
  { re: /^\s+Neighbor AS:\s+(\d+)/, apply: onSession((s, m) => (s.remote_asn = Number(m[1]))) },
  { re: /^\s+Last error:\s+(.*?)\s*$/, apply: onSession((s, m) => (s.last_error = m[1] || null)) },
  {
    // "Routes: 1 imported, 3 exported, 0 preferred", with "N filtered, " under import keep filtered.
    re: /^\s+Routes:\s+(\d+) imported, (?:(\d+) filtered, )?(\d+) exported(?:, (\d+) preferred)?/,
    apply: (m, c) => {
      if (c?.channel) {
        c.channel.routes_imported = Number(m[1]);
        c.channel.routes_filtered = Number(m[2] ?? 0);
        c.channel.routes_exported = Number(m[3]);
        c.channel.routes_preferred = Number(m[4] ?? 0);
      }
      if (c?.session) {
        c.session.routes_imported += Number(m[1]);
        c.session.routes_exported += Number(m[3]);
      }
      return c;
    },
  },
];

/** A handler for a detail line of a BGP protocol; detail lines of other protocols are ignored. */
function onSession(set: (session: BgpSessionLive, m: RegExpExecArray) => void): Handler["apply"] {
  return (m, current) => {
    if (current?.session) set(current.session, m);
    return current;
  };
}

/** A handler for a detail line of the channel being read; lines outside a channel are ignored. */
function onChannel(set: (channel: ChannelStatus, m: RegExpExecArray) => void): Handler["apply"] {
  return (m, current) => {
    if (current?.channel) set(current.channel, m);
    return current;
  };
}

/** Parses `birdc show protocols all` text (as birdc prints it, or as the text of a BirdClient reply). */
export function parseProtocolsAll(text: string, options: ParseOptions): ParsedProtocols {
  const out: ParsedProtocols = { protocols: [], sessions: [], channels: [] };
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
 * One channel of a BIRD protocol as the agent's metrics label it (bird_exporter's labels:
 * `ip_version`, `import_filter`, `export_filter`) with its route counts.
 */
export interface ProtocolChannel {
  /** `4` or `6`. */
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

/**
 * Each protocol's IP channels (by protocol name, every protocol listed) from `birdc show
 * protocols all` text, for the agent's metrics: parseProtocolsAll's channels, grouped.
 */
export function parseProtocolChannels(text: string): Map<string, ProtocolChannel[]> {
  const parsed = parseProtocolsAll(text, { now: new Date(), timeZone: "utc" });
  const out = new Map<string, ProtocolChannel[]>(parsed.protocols.map((p) => [p.name, []]));
  for (const c of parsed.channels) {
    const ip = /^ipv(4|6)\b/.exec(c.channel)?.[1];
    if (!ip) continue;
    out.get(c.protocol)?.push({
      ip_version: ip,
      import_filter: c.import_filter,
      export_filter: c.export_filter,
      imported: c.routes_imported,
      exported: c.routes_exported,
      filtered: c.routes_filtered,
      preferred: c.routes_preferred,
    });
  }
  return out;
}
