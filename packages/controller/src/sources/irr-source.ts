// AS-SETs expanded through an IRR server (`IRR_SOURCE=whois://host[:port]`), as bgpq4 does:
// `!s<sources>` once, then `!i<set>,1` per set, which IRRd answers with the set's members
// resolved recursively. A set pinned to a source (`RIPE::AS-EXAMPLE`) is asked between
// `!sRIPE` and `!s<sources>` again, sent back to back so that no other query runs in between.
// Should an answer still hold set names (a server that does not resolve them, or a member set
// found only in another source), those are expanded too, each once: loops end.
import { connectIrr, type IrrAnswer, type IrrConnection, IrrError, parseIrrUrl } from "./irr-client.js";

export { IrrError } from "./irr-client.js";

/** What `IRR_SOURCES` is when unset: the RIRs' databases, their RPKI-derived one, and RADB. */
export const DEFAULT_IRR_SOURCES = ["RPKI", "RIPE", "ARIN", "APNIC", "AFRINIC", "LACNIC", "RADB"];

export interface IrrSourceOptions {
  /** `IRR_SOURCES`: the sources a set without a pinned one is looked up in. */
  sources?: string[];
  /** `IRR_MAX_MEMBERS`: a set with more member ASNs fails (default 20,000). */
  maxMembers?: number;
  /** `IRR_TIME_LIMIT_SECONDS`, in ms: one set's expansion at most (default 60 s). */
  timeLimitMs?: number;
  /** `!i` queries in flight on the connection at once (default 4). */
  concurrency?: number;
  /** Connecting, and any one answer (default 15 s). */
  queryTimeoutMs?: number;
}

export interface IrrSource {
  /** A session holds one connection, opened on its first query: one per refresh. */
  session(signal?: AbortSignal): IrrSession;
}

export interface IrrSession {
  /** The member ASNs of a set (sorted, distinct). Throws IrrError when missing, over the limits or unreachable. */
  expand(asSet: string): Promise<number[]>;
  /** Connections this session opened (1 unless the server closed one in between). */
  readonly connections: number;
  close(): void;
}

const AS_TOKEN = /^AS(\d{1,10})$/i;

/** `RIPE::AS-EXAMPLE` → source and set; no pin → source null. */
export function splitPinnedSet(asSet: string): { source: string | null; name: string } {
  const at = asSet.indexOf("::");
  return at === -1 ? { source: null, name: asSet } : { source: asSet.slice(0, at), name: asSet.slice(at + 2) };
}

export function createIrrSource(spec: string, options: IrrSourceOptions = {}): IrrSource {
  const target = parseIrrUrl(spec);
  const sources = options.sources ?? DEFAULT_IRR_SOURCES;
  const maxMembers = options.maxMembers ?? 20_000;
  const timeLimitMs = options.timeLimitMs ?? 60_000;
  const concurrency = options.concurrency ?? 4;
  const queryTimeoutMs = options.queryTimeoutMs ?? 15_000;

  return {
    session(signal) {
      let connection: Promise<IrrConnection> | null = null;
      let connections = 0;
      let closed = false;
      let inFlight = 0;
      const queue: (() => void)[] = [];

      const connect = (): Promise<IrrConnection> => {
        if (closed) return Promise.reject(new IrrError("IRR session closed"));
        const open = async () => {
          connections++;
          const c = await connectIrr(target, { timeoutMs: queryTimeoutMs, ...(signal ? { signal } : {}) });
          if (sources.length) expectOk(await c.query(`!s${sources.join(",")}`), `sources ${sources.join(",")}`);
          return c;
        };
        const current = connection;
        // A connection the server closed while idle is replaced once, on the next query.
        connection = current
          ? current.then(
              (c) => (c.open ? c : open()),
              () => open(),
            )
          : open();
        return connection;
      };

      const dropConnection = () => {
        const dropped = connection;
        connection = null;
        dropped?.then(
          (c) => c.close(),
          () => {},
        );
      };

      const slot = async <T>(fn: () => Promise<T>): Promise<T> => {
        if (inFlight >= concurrency) await new Promise<void>((resolve) => queue.push(resolve));
        inFlight++;
        try {
          return await fn();
        } finally {
          inFlight--;
          queue.shift()?.();
        }
      };

      const ask = (source: string | null, name: string): Promise<IrrAnswer> =>
        slot(async () => {
          const c = await connect();
          if (source === null) return c.query(`!i${name},1`);
          // Sent back to back, before any other query: the pin covers this one query only.
          const pin = c.query(`!s${source}`);
          const answer = c.query(`!i${name},1`);
          const restore = sources.length ? c.query(`!s${sources.join(",")}`) : Promise.resolve<IrrAnswer>({ kind: "none" });
          const [pinned, result, restored] = await Promise.allSettled([pin, answer, restore]);
          if (pinned.status === "rejected") throw new IrrError(`source ${source}: ${messageOf(pinned.reason)}`);
          if (pinned.value.kind === "not_found") throw new IrrError(`source ${source} is unknown to the IRR server`);
          if (restored.status === "rejected") throw restored.reason;
          if (result.status === "rejected") throw result.reason;
          return result.value;
        });

      return {
        get connections() {
          return connections;
        },
        async expand(asSet) {
          const { source, name } = splitPinnedSet(asSet);
          const deadline = Date.now() + timeLimitMs;
          const members = new Set<number>();
          const seen = new Set<string>([name.toUpperCase()]);
          let frontier = [name];
          let top = true;
          while (frontier.length) {
            const answers = await withDeadline(
              Promise.all(frontier.map((n) => ask(source, n))),
              deadline,
              `${asSet}: the expansion took longer than ${timeLimitMs / 1000} s`,
            ).catch((err: unknown) => {
              // A late answer would be taken for the next query's: the connection is dropped,
              // and the next query opens another.
              if (err instanceof IrrError && err.message.includes("took longer")) dropConnection();
              throw err;
            });
            const next: string[] = [];
            answers.forEach((answer) => {
              if (answer.kind === "not_found") {
                // A missing member set is skipped, as IRRd itself does; a missing named set fails.
                if (top) throw new IrrError(`${asSet} was not found${source ? "" : ` in ${sources.join(",")}`}`);
                return;
              }
              if (answer.kind !== "data") return;
              for (const token of answer.text.split(/\s+/)) {
                if (!token) continue;
                const m = AS_TOKEN.exec(token);
                if (m) {
                  const asn = Number(m[1]);
                  if (asn >= 1 && asn <= 4294967295) members.add(asn);
                } else if (!seen.has(token.toUpperCase())) {
                  seen.add(token.toUpperCase());
                  next.push(token);
                }
              }
            });
            if (members.size > maxMembers) throw new IrrError(`${asSet} has more than ${maxMembers} member ASNs (IRR_MAX_MEMBERS)`);
            frontier = next;
            top = false;
          }
          return [...members].sort((a, b) => a - b);
        },
        close() {
          closed = true;
          connection?.then(
            (c) => c.close(),
            () => {},
          );
        },
      };
    },
  };
}

function expectOk(answer: IrrAnswer, what: string): void {
  if (answer.kind === "not_found") throw new IrrError(`${what}: unknown to the IRR server`);
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

function withDeadline<T>(promise: Promise<T>, deadline: number, message: string): Promise<T> {
  const left = deadline - Date.now();
  if (left <= 0) return Promise.reject(new IrrError(message));
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IrrError(message)), left);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
