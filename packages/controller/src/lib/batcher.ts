/** What a batcher is built with. */
export interface BatcherOptions<I, O> {
  /** Runs a batch: answers one result per item, in the items' order. */
  run: (items: I[]) => Promise<O[]>;
  /**
   * Items of one key never run at once: the second waits for a batch after the first, so a
   * key's items run one after another in the order they came (two reports of one speaker).
   */
  keyOf?: (item: I) => string;
  /** Items in one batch at most (default 500). */
  max?: number;
  /**
   * A batch in flight longer than this (default 1 s) no longer holds the others back: the next
   * starts beside it (a statement stuck on a dead connection must not stop every caller).
   */
  stalledMs?: number;
}

/** Batches in flight at once at most, stalled ones included. */
const MAX_IN_FLIGHT = 8;

/**
 * Runs what callers hand to `add` in batches: an item that finds no batch in flight runs at
 * once, alone; those that come while one is in flight go together into the next. Each caller
 * gets its own item's result. When agents report or fetch at once (an apply to hundreds of
 * speakers), a statement then carries every item that came during the last one's round trip
 * instead of one round trip each: a round trip costs the controller more CPU (and a socket
 * write each side) than a row does, and the busier the database, the longer the round trip and
 * the larger the next batch.
 * A batch that fails is run again one item at a time, so one bad item fails only its own caller.
 */
export function createBatcher<I, O>(o: BatcherOptions<I, O>): { add(item: I): Promise<O> } {
  type Waiting = { item: I; key: string | undefined; resolve: (value: O) => void; reject: (error: unknown) => void };
  const max = Math.max(1, o.max ?? 500);
  const stalledMs = o.stalledMs ?? 1000;
  let queue: Waiting[] = [];
  /** When each batch in flight started. */
  const inFlight = new Set<{ at: number }>();
  const busyKeys = new Set<string>();
  let timer: NodeJS.Timeout | null = null;

  /** The next batch, taken from the queue in order: at most `max`, one item per key, none of a key in flight. */
  const take = (): Waiting[] => {
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    const keys = new Set<string>();
    for (const w of queue) {
      if (batch.length < max && (w.key === undefined || (!keys.has(w.key) && !busyKeys.has(w.key)))) {
        batch.push(w);
        if (w.key !== undefined) keys.add(w.key);
      } else rest.push(w); // later items of a key passed over are passed over too: its earlier one runs first
    }
    queue = rest;
    return batch;
  };

  // Called at once (a lone item's query leaves in the caller's turn); a `run` that throws
  // instead of rejecting is a rejection all the same.
  const run = (items: I[]): Promise<O[]> => {
    try {
      return o.run(items);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  const settle = async (batch: Waiting[]) => {
    try {
      const out = await run(batch.map((w) => w.item));
      for (const [i, w] of batch.entries()) w.resolve(out[i] as O);
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      await Promise.all(
        batch.map((w) =>
          run([w.item]).then(
            (out) => w.resolve(out[0] as O),
            (e: unknown) => w.reject(e),
          ),
        ),
      );
    }
  };

  /** Starts the next batch when none is in flight, or when every one in flight has stalled. */
  const pump = () => {
    for (;;) {
      if (!queue.length) return;
      const now = Date.now();
      const youngest = Math.max(...[...inFlight].map((f) => f.at));
      if (inFlight.size && now - youngest < stalledMs) {
        // Looked at again when the youngest would stall (or sooner, when a batch ends).
        if (!timer) {
          timer = setTimeout(
            () => {
              timer = null;
              pump();
            },
            stalledMs - (now - youngest),
          );
          timer.unref();
        }
        return;
      }
      if (inFlight.size >= MAX_IN_FLIGHT) return;
      const batch = take();
      if (!batch.length) return; // every waiting item's key is in flight: its batch's end pumps again
      const flight = { at: now };
      inFlight.add(flight);
      const keys = batch.flatMap((w) => (w.key === undefined ? [] : [w.key]));
      for (const k of keys) busyKeys.add(k);
      void settle(batch).finally(() => {
        inFlight.delete(flight);
        for (const k of keys) busyKeys.delete(k);
        pump();
      });
    }
  };

  return {
    add(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, key: o.keyOf?.(item), resolve, reject });
        pump();
      });
    },
  };
}
