import type { z } from "zod";

/** A configuration that cannot be used; the message lists what is wrong, one variable a line. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The environment read through `schema`, or a {@link ConfigError} listing every bad variable. */
export function parseEnvironment<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
