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

type Line = { re: RegExp; apply: (m: RegExpExecArray, state: State) => void };
interface State {
  out: Map<string, ProtocolChannel[]>;
  channels: ProtocolChannel[] | null;
  channel: ProtocolChannel | null;
}

/*
 * Line handlers tried in order, the first match wins, as bird_exporter's parser does it: a
 * summary line starts a protocol, `Channel ipvN` starts a channel of it, and the filter and
 * route lines that follow fill that channel in. Regexes compiled once.
 */
const LINES: readonly Line[] = [
  { re: /^BIRD \S+ ready\.$|^Name\s+Proto\s+Table\s+State\s+Since/, apply: () => {} },
  {
    re: /^(\S+)\s+\S+\s+\S+\s+[a-z]+\s/,
    apply: (m, s) => {
      s.channels = [];
      s.channel = null;
      s.out.set(m[1] as string, s.channels);
    },
  },
  {
    re: /^\s+Channel ipv(4|6)\b/,
    apply: (m, s) => {
      if (!s.channels) return;
      s.channel = { ip_version: m[1] as string, import_filter: "", export_filter: "", imported: 0, exported: 0, filtered: 0, preferred: 0 };
      s.channels.push(s.channel);
    },
  },
  { re: /^\s+Input filter:\s+(.*?)\s*$/, apply: (m, s) => s.channel && (s.channel.import_filter = m[1] as string) },
  { re: /^\s+Output filter:\s+(.*?)\s*$/, apply: (m, s) => s.channel && (s.channel.export_filter = m[1] as string) },
  {
    re: /^\s+Routes:\s+(\d+) imported, (?:(\d+) filtered, )?(\d+) exported(?:, (\d+) preferred)?/,
    apply: (m, s) => {
      if (!s.channel) return;
      s.channel.imported = Number(m[1]);
      s.channel.filtered = Number(m[2] ?? 0);
      s.channel.exported = Number(m[3]);
      s.channel.preferred = Number(m[4] ?? 0);
    },
  },
];

/** Each protocol's channels (by protocol name) from `birdc show protocols all` text. */
export function parseProtocolChannels(text: string): Map<string, ProtocolChannel[]> {
  const state: State = { out: new Map(), channels: null, channel: null };
  for (const line of text.split("\n")) {
    for (const handler of LINES) {
      const m = handler.re.exec(line);
      if (m) {
        handler.apply(m, state);
        break;
      }
    }
  }
  return state.out;
}
