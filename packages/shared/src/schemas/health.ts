import { z } from "zod";

export const Health = z.object({ status: z.literal("ok") }).meta({ id: "Health" });

export const Ready = z
  .object({
    status: z.enum(["ready", "not_ready"]),
    checks: z.record(z.string(), z.string()),
  })
  .meta({ id: "Ready" });

export const Version = z
  .object({
    version: z.string(),
    commit: z.string(),
    build_time: z.string(),
    api: z.literal("v1"),
    node: z.string(),
  })
  .meta({ id: "Version" });
