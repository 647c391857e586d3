/** The clock every service reads; tests pass their own to move time. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function isoRequired(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
