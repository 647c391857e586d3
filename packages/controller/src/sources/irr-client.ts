// One connection to an IRR server speaking IRRd's query protocol (whois port 43, `!!` for a
// persistent connection). Queries are pipelined: IRRd answers them in the order sent, so each
// answer settles the oldest waiting query. Answers are
//   `A<length>\n<length bytes>C\n`  data,
//   `C\n`                           success without data,
//   `D\n`                           no such object,
//   `E\n`                           several copies (treated as no data),
//   `F <message>\n`                 an error.
import net from "node:net";

export type IrrAnswer = { kind: "data"; text: string } | { kind: "none" } | { kind: "not_found" };

export class IrrError extends Error {
  override name = "IrrError";
}

/** Bytes of one answer at most: a recursive member list of the largest sets is a few MB. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export interface IrrConnection {
  /** Sends one query line (without the newline) and waits for its answer. */
  query(line: string): Promise<IrrAnswer>;
  /** False once the connection failed or was closed. */
  readonly open: boolean;
  close(): void;
}

interface Waiting {
  resolve: (a: IrrAnswer) => void;
  reject: (e: Error) => void;
}

/** `whois://host[:port]` (port 43 unless given). */
export function parseIrrUrl(spec: string): { host: string; port: number } {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new IrrError(`IRR_SOURCE must be whois://host[:port], not "${spec}"`);
  }
  if (url.protocol !== "whois:" || !url.hostname || (url.pathname !== "" && url.pathname !== "/")) {
    throw new IrrError(`IRR_SOURCE must be whois://host[:port], not "${spec}"`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return { host, port: url.port ? Number(url.port) : 43 };
}

/** Opens a connection and switches it to persistent mode (`!!`, which IRRd does not answer). */
export function connectIrr(target: { host: string; port: number }, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<IrrConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: target.host, port: target.port });
    const waiting: Waiting[] = [];
    let buffer: Buffer = Buffer.alloc(0);
    let failure: Error | null = null;
    let connected = false;
    const fail = (err: Error, graceful = false) => {
      if (failure) return;
      failure = err;
      for (const w of waiting.splice(0)) w.reject(err);
      if (graceful) socket.end("!q\n");
      else socket.destroy();
    };
    const onAbort = () => fail(new IrrError("IRR query cancelled"));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    // Idle between queries is fine (the refresh collects ASNs in between); a query waiting is not.
    socket.setTimeout(opts.timeoutMs, () => {
      if (waiting.length > 0 || !connected) fail(new IrrError(`IRR server ${target.host}:${target.port} did not answer within ${opts.timeoutMs} ms`));
    });
    socket.on("error", (err) => {
      const wrapped = new IrrError(`IRR server ${target.host}:${target.port}: ${err.message}`, { cause: err });
      fail(wrapped);
      if (!connected) reject(wrapped);
    });
    socket.on("close", () => {
      opts.signal?.removeEventListener("abort", onAbort);
      if (!connected) reject(new IrrError(`IRR server ${target.host}:${target.port} closed the connection`));
      fail(new IrrError(`IRR server ${target.host}:${target.port} closed the connection`));
    });
    socket.on("data", (chunk: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      for (;;) {
        const parsed = takeAnswer(buffer);
        if (parsed === null) break;
        buffer = buffer.subarray(parsed.used);
        const w = waiting.shift();
        if (!w) return fail(new IrrError("IRR server answered a query that was not asked"));
        if (parsed.answer instanceof Error) w.reject(parsed.answer);
        else w.resolve(parsed.answer);
      }
      if (buffer.length > MAX_ANSWER_BYTES + 64) fail(new IrrError(`IRR answer larger than ${MAX_ANSWER_BYTES} bytes`));
    });
    socket.once("connect", () => {
      connected = true;
      socket.write("!!\n");
      resolve({
        get open() {
          return failure === null;
        },
        query(line) {
          if (failure) return Promise.reject(failure);
          if (/[\r\n]/.test(line)) return Promise.reject(new IrrError("an IRR query is one line"));
          return new Promise<IrrAnswer>((res, rej) => {
            waiting.push({ resolve: res, reject: rej });
            socket.write(`${line}\n`);
          });
        },
        close() {
          fail(new IrrError("IRR connection closed"), true);
        },
      });
    });
  });
}

/** One answer from the start of `buf`, or null when more bytes are needed. */
function takeAnswer(buf: Buffer): { used: number; answer: IrrAnswer | Error } | null {
  const nl = buf.indexOf(10);
  if (nl === -1) return null;
  const head = buf.subarray(0, nl).toString("latin1").replace(/\r$/, "");
  const code = head[0];
  if (code === "A") {
    const length = Number(head.slice(1));
    if (!Number.isInteger(length) || length < 0 || length > MAX_ANSWER_BYTES)
      return { used: nl + 1, answer: new IrrError(`IRR answer header "${head.slice(0, 40)}"`) };
    const end = nl + 1 + length;
    const tail = buf.indexOf(10, end);
    if (tail === -1) return null;
    const closing = buf.subarray(end, tail).toString("latin1").trim();
    const text = buf.subarray(nl + 1, end).toString("utf8");
    if (closing !== "C") return { used: tail + 1, answer: new IrrError(`IRR answer not closed by C but "${closing.slice(0, 40)}"`) };
    return { used: tail + 1, answer: { kind: "data", text } };
  }
  if (code === "C") return { used: nl + 1, answer: { kind: "none" } };
  if (code === "D" || code === "E") return { used: nl + 1, answer: { kind: "not_found" } };
  if (code === "F") return { used: nl + 1, answer: new IrrError(`IRR server: ${head.slice(1).trim() || "error"}`) };
  return { used: nl + 1, answer: new IrrError(`IRR server sent "${head.slice(0, 40)}"`) };
}
