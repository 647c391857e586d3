/**
 * An error that carries a stable word from a closed set (`C`) beside its message: what a
 * caller branches on, and what is reported as it is (an agent's status report, an apply job).
 * Subclasses name the set and the error; they add fields only where they have more to say.
 */
export class CodedError<C extends string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
