/** The outcome of normalising one user-written value: the canonical form, or why it is refused. */
export type ValueResult<T> = { ok: true; value: T } | { ok: false; message: string };

export const accept = <T>(value: T): ValueResult<T> => ({ ok: true, value });
export const refuse = <T>(message: string): ValueResult<T> => ({ ok: false, message });
