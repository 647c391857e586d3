/**
 * The controller's endpoints (gRPC `host:port` or HTTP bases) in the order configured, and the
 * one in use. A failure of the one in use moves to the next, round-robin; the agent stays where
 * it is until that one fails in turn (a replica coming back takes no agents from the others).
 */
export class EndpointRing {
  readonly #list: readonly string[];
  readonly #onMove: (from: string, to: string) => void;
  #index = 0;

  /** `onMove` hears each move (for the log and the status). */
  constructor(list: readonly string[], onMove: (from: string, to: string) => void = () => undefined) {
    if (list.length === 0) throw new Error("EndpointRing: no endpoint");
    this.#list = [...list];
    this.#onMove = onMove;
  }

  get current(): string {
    return this.#list[this.#index]!;
  }

  get size(): number {
    return this.#list.length;
  }

  /**
   * `endpoint` failed: the next one is used from now on. A failure of an endpoint no longer in
   * use changes nothing, so that two calls failing on the same replica move the agent once, not
   * twice (back onto the one that failed). Answers the endpoint in use.
   */
  failed(endpoint: string): string {
    if (this.#list.length > 1 && endpoint === this.current) {
      this.#index = (this.#index + 1) % this.#list.length;
      this.#onMove(endpoint, this.current);
    }
    return this.current;
  }
}
