import pino from "pino";

/**
 * Structured log lines through pino, the controller's logger too, so one pipeline reads both:
 * one JSON object per line on stderr (journald under systemd), `"level":30`, `"time"` in epoch ms.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

/** `write` receives each line (tests); by default lines go to stderr synchronously, so none is lost at exit. */
export function createLogger(level: LogLevel = "info", write?: (line: string) => void): Logger {
  const destination = write ? { write } : pino.destination({ fd: 2, sync: true });
  const logger = pino(
    {
      level,
      // Never a credential in a log line, whatever a caller passes along.
      redact: { paths: ["node_key", "token", "enrollment_token", "*.node_key", "*.token", "authorization"], censor: "[redacted]" },
    },
    destination,
  );
  const at =
    (lvl: Exclude<LogLevel, "silent">) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      logger[lvl](fields, msg);
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export const silentLogger: Logger = createLogger("silent", () => {});

/** An error as log fields: its code when it has one, never a stack (journald lines stay short). */
export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { error: error.message, ...(typeof code === "string" ? { code } : {}) };
  }
  return { error: String(error) };
}
