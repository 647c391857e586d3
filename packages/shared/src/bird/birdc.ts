import { connect as netConnect, type Socket } from "node:net";

/**
 * BIRD's control socket, spoken directly (what birdc does in client/client.c): each reply line
 * is a 4-digit code followed by `-` (more lines follow) or a space (the reply's last line); a
 * line starting with a space continues the previous code; a line starting with `+` is an
 * asynchronous message outside any reply. 0xxx is success, 1xxx/2xxx table data,
 * 8xxx run-time errors, 9xxx parse errors. BIRD greets a new connection with
 * `0001 BIRD 2.0.12 ready.` and answers one command at a time.
 */

export interface BirdReplyLine {
  code: number;
  text: string;
}

export interface BirdReply {
  /** Code of the reply's last line: 0 (OK), 3 (reconfigured), 13 (status), 20 (config OK), … */
  code: number;
  lines: BirdReplyLine[];
  /** The reply as birdc prints it: codes dropped, an empty `0000` line left out. */
  text: string;
}

/** A BIRD control connection; an interface so apply and status can be tested without BIRD. */
export interface BirdControl {
  /** Sends one command and resolves with its reply; rejects with a {@link BirdError}. */
  command(command: string, options?: { timeoutMs?: number }): Promise<BirdReply>;
  close(): void;
}

export type BirdErrorCode = "bird_unavailable" | "bird_timeout" | "bird_command_failed" | "bird_protocol";

export class BirdError extends Error {
  override name = "BirdError";
  readonly code: BirdErrorCode;
  /** BIRD's reply code for `bird_command_failed` (8xxx, 9xxx). */
  readonly birdCode: number | null;
  readonly reply: BirdReply | null;

  constructor(code: BirdErrorCode, message: string, options: { birdCode?: number; reply?: BirdReply; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.birdCode = options.birdCode ?? null;
    this.reply = options.reply ?? null;
  }
}

export interface BirdClientOptions {
  socketPath: string;
  /** Per command, including connecting and the greeting. Default 10 s. */
  timeoutMs?: number;
  /** Opens the stream; tests and other transports pass their own. */
  connect?: (path: string) => Socket;
}

interface Pending {
  lines: BirdReplyLine[];
  resolve: (reply: BirdReply) => void;
  reject: (error: Error) => void;
}

export class BirdClient implements BirdControl {
  readonly #path: string;
  readonly #timeoutMs: number;
  readonly #connect: (path: string) => Socket;
  #socket: Socket | null = null;
  #buffer = "";
  #pending: Pending | null = null;
  /** Commands run one after another: BIRD answers them in order on one connection. */
  #queue: Promise<unknown> = Promise.resolve();
  #greeting: string | null = null;

  constructor(options: BirdClientOptions) {
    this.#path = options.socketPath;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#connect = options.connect ?? netConnect;
  }

  /** BIRD's greeting on the current connection, e.g. `BIRD 2.0.12 ready.`. */
  get greeting(): string | null {
    return this.#greeting;
  }

  command(command: string, options: { timeoutMs?: number } = {}): Promise<BirdReply> {
    if (/[\r\n\0]/.test(command) || command.trim() === "") {
      return Promise.reject(new BirdError("bird_protocol", "a command is one non-empty line"));
    }
    const run = this.#queue.then(() => this.#run(command, options.timeoutMs ?? this.#timeoutMs));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  close(): void {
    this.#drop(new BirdError("bird_unavailable", "client closed"));
  }

  async #run(command: string, timeoutMs: number): Promise<BirdReply> {
    const deadline = Date.now() + timeoutMs;
    if (!this.#socket) {
      const greeting = await this.#withTimeout(this.#open(), deadline, "connect");
      this.#greeting = greeting.text;
    }
    const reply = await this.#withTimeout(
      this.#expectReply(() => this.#socket?.write(`${command}\n`)),
      deadline,
      command,
    );
    if (reply.code >= 8000) {
      throw new BirdError("bird_command_failed", `${command}: ${reply.text || reply.code}`, { birdCode: reply.code, reply });
    }
    return reply;
  }

  #open(): Promise<BirdReply> {
    const socket = this.#connect(this.#path);
    this.#socket = socket;
    this.#buffer = "";
    socket.setEncoding("utf8");
    // Events of a connection already dropped (after a timeout) must not touch its successor.
    const current = () => this.#socket === socket;
    socket.on("data", (chunk: string) => current() && this.#onData(chunk));
    socket.on("error", (cause) => {
      if (current()) this.#drop(new BirdError("bird_unavailable", `control socket ${this.#path}: ${cause.message}`, { cause }));
    });
    socket.on("close", () => {
      if (current()) this.#drop(new BirdError("bird_unavailable", `control socket ${this.#path} closed`));
    });
    return this.#expectReply(() => undefined);
  }

  #expectReply(send: () => void): Promise<BirdReply> {
    return new Promise<BirdReply>((resolve, reject) => {
      this.#pending = { lines: [], resolve, reject };
      send();
    });
  }

  #onData(chunk: string): void {
    this.#buffer += chunk;
    let newline = this.#buffer.indexOf("\n");
    while (newline >= 0) {
      const line = this.#buffer.slice(0, newline);
      this.#buffer = this.#buffer.slice(newline + 1);
      this.#onLine(line);
      newline = this.#buffer.indexOf("\n");
    }
  }

  #onLine(line: string): void {
    if (line.startsWith("+")) return; // asynchronous message, not part of a reply
    const pending = this.#pending;
    if (!pending) return;
    if (line.startsWith(" ")) {
      pending.lines.push({ code: pending.lines.at(-1)?.code ?? 0, text: line.slice(1) });
      return;
    }
    const m = /^(\d{4})([ -])(.*)$/.exec(line);
    if (!m) {
      this.#drop(new BirdError("bird_protocol", `unexpected line from BIRD: ${line.slice(0, 200)}`));
      return;
    }
    pending.lines.push({ code: Number(m[1]), text: m[3] as string });
    if (m[2] === " ") {
      this.#pending = null;
      const lines = pending.lines;
      const text = lines
        .filter((l, i) => !(i === lines.length - 1 && l.code === 0 && l.text === ""))
        .map((l) => l.text)
        .join("\n");
      pending.resolve({ code: Number(m[1]), lines, text });
    }
  }

  /** Fails the command in flight and forgets the connection; the next command reconnects. */
  #drop(error: BirdError): void {
    const pending = this.#pending;
    this.#pending = null;
    const socket = this.#socket;
    this.#socket = null;
    this.#greeting = null;
    socket?.destroy();
    pending?.reject(error);
  }

  async #withTimeout<T>(promise: Promise<T>, deadline: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          // The reply may still come; on this connection it would answer the wrong command.
          const error = new BirdError("bird_timeout", `${what}: no answer from BIRD within the timeout`);
          this.#drop(error);
          reject(error);
        },
        Math.max(0, deadline - Date.now()),
      );
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
