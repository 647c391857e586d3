/** A PostgreSQL unique_violation (23505): a concurrent writer took the name or value first. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "23505";
}

/** A PostgreSQL foreign_key_violation (23503): the row is still referenced, or the reference is gone. */
export function isForeignKeyViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "23503";
}
