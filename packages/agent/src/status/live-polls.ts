import type { Clock } from "@rlc/shared/time";

/** Poll ids remembered to answer each once: the same poll arrives over NATS and over the Watch stream. */
const REMEMBERED = 256;

/**
 * Answers the controller's live polls, each poll id once, at most one report per `minIntervalMs`:
 * polls that arrive while one is waiting replace it (the newest is answered), so a burst of
 * polls costs one `birdc` run and one report, not one each.
 */
export class LivePollAnswerer {
  readonly #seen = new Set<string>();
  #pending: string | null = null;
  #running = false;
  #lastAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly o: {
      report: (pollId: string) => Promise<unknown>;
      minIntervalMs: number;
      clock: Clock;
    },
  ) {}

  /** Takes a poll; false when its id was seen already. */
  poll(pollId: string): boolean {
    if (this.#seen.has(pollId)) return false;
    this.#seen.add(pollId);
    if (this.#seen.size > REMEMBERED) this.#seen.delete(this.#seen.values().next().value as string);
    this.#pending = pollId;
    if (!this.#running) void this.#drain();
    return true;
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#pending) {
        const wait = this.#lastAt + this.o.minIntervalMs - this.o.clock.now();
        if (wait > 0) await this.o.clock.sleep(wait);
        const pollId = this.#pending;
        this.#pending = null;
        this.#lastAt = this.o.clock.now();
        await this.o.report(pollId).catch(() => undefined);
      }
    } finally {
      this.#running = false;
    }
  }
}
