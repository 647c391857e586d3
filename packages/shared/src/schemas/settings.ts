import { isIP } from "node:net";
import { z } from "zod";
import { BIRD_DEFAULTS, PROBATION_CONFIRM_MARGIN_SECONDS } from "../bundle/payload.js";
import { Timestamp } from "./common.js";

const ipv4 = z.string().refine((v) => isIP(v) === 4, "must be an IPv4 address");
const ipv6 = z.string().refine((v) => isIP(v) === 6, "must be an IPv6 address");
const cidr = z.string().refine((v) => {
  const [addr, len, extra] = v.split("/");
  if (extra !== undefined || addr === undefined || len === undefined || !/^\d{1,3}$/.test(len)) return false;
  const family = isIP(addr);
  return family !== 0 && Number(len) <= (family === 4 ? 32 : 128);
}, "must be a CIDR prefix");
const asn = z.number().int().min(1).max(4294967295);

/** The `BIRD` settings key; further keys are kept as they are. */
export const BirdSettings = z
  .looseObject({
    bird_bgp_source_ipv4: ipv4.optional(),
    bird_bgp_source_ipv6: ipv6.optional(),
    router_id: ipv4.optional(),
    local_asn: asn.optional(),
    next_hop_ipv4: ipv4.optional(),
    next_hop_ipv6: ipv6.optional(),
    exclude_prefixes: z.array(cidr).max(10000).optional(),
    min_prefix_length_v4: z.number().int().min(0).max(32).optional(),
    min_prefix_length_v6: z.number().int().min(0).max(128).optional(),
    static_route_kind: z.enum(["blackhole", "unreachable"]).optional(),
    configure_timeout_seconds: z
      .number()
      .int()
      .min(5)
      .max(3600)
      .optional()
      .describe(
        `\`configure timeout\`: BIRD goes back to the previous configuration unless the agent confirms within this many seconds (default ${BIRD_DEFAULTS.configure_timeout_seconds}).`,
      ),
    confirm_after_seconds: z
      .number()
      .int()
      .min(0)
      .max(300)
      .optional()
      .describe(
        `The probation window (default ${BIRD_DEFAULTS.confirm_after_seconds}): how long the agent watches BGP sessions, exported routes and its way to the controller after a reload before it confirms; ` +
          `0 = confirm once BIRD runs the rendered protocols. Must stay at least ${PROBATION_CONFIRM_MARGIN_SECONDS} s below configure_timeout_seconds.`,
      ),
    probation_check_controller: z.boolean().optional().describe("Whether the probation also requires the agent to reach the controller (default true)."),
  })
  .superRefine((v, ctx) => {
    const timeout = v.configure_timeout_seconds ?? BIRD_DEFAULTS.configure_timeout_seconds;
    const window = v.confirm_after_seconds ?? BIRD_DEFAULTS.confirm_after_seconds;
    if (timeout < window + PROBATION_CONFIRM_MARGIN_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: [v.configure_timeout_seconds === undefined ? "confirm_after_seconds" : "configure_timeout_seconds"],
        message: `configure_timeout_seconds (${timeout}) must be at least confirm_after_seconds (${window}) + ${PROBATION_CONFIRM_MARGIN_SECONDS}: the agent confirms after the probation window, before BIRD's timer runs out`,
      });
    }
  })
  .meta({ id: "BirdSettings" });

/** Known keys and their validation; every other key is stored as given. */
export const knownSettings: Record<string, z.ZodType> = {
  BIRD: BirdSettings,
  revision_retention_minutes: z.number().int().min(0),
  revision_guard_max_drop_percent: z.number().min(0).max(100),
  source_max_stale_hours: z.number().int().min(0).max(87600),
  runtime_logs_auto_enabled: z.boolean(),
  runtime_logs_auto_interval_minutes: z.number().int().min(5).max(10080),
  runtime_logs_auto_threshold_bytes: z.number().int().min(1),
  runtime_logs_auto_mode: z.enum(["truncate", "delete"]),
};

export const SettingsPatch = z
  .record(z.string().min(1).max(128), z.unknown())
  .describe("JSON merge patch (RFC 7396): `null` deletes a key; known keys are validated, others kept.")
  .meta({ id: "SettingsPatch" });

export const Settings = z
  .object({
    settings: z.record(z.string(), z.unknown()),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: "Settings" });

export type BirdSettings = z.infer<typeof BirdSettings>;
