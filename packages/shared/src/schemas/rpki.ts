import { z } from "zod";
import { Timestamp, Uuid } from "./common.js";
import { RpkiPolicy } from "./modules.js";

export const RpkiStatus = z
  .object({
    available: z
      .boolean()
      .describe("False while the VRP document failed to load or was built longer ago than `RPKI_MAX_AGE_HOURS`: then nothing is validated or dropped."),
    reason: z.string().nullable().describe("Why validation is unavailable; null when it is available."),
    generated_at: Timestamp.nullable().describe("The VRP document's own build time."),
    loaded_at: Timestamp.nullable().describe("When the document was last read."),
    vrp_count: z.number().int(),
  })
  .meta({ id: "RpkiStatus" });
export type RpkiStatus = z.infer<typeof RpkiStatus>;

export const RpkiInvalidPrefix = z.object({
  prefix: z.string(),
  origin: z.number().int().describe("The ASN whose announcement it is."),
  via: z.string().optional().describe("The AS-SET entry the ASN came through."),
});

export const RpkiDryRun = z
  .object({
    dry_run: z.literal(true),
    rpki: RpkiStatus,
    modules: z.array(
      z.object({
        module_id: Uuid,
        rpki_policy: RpkiPolicy.describe("The module's policy now; the counts are what `drop_invalid` would do, whatever it is."),
        valid: z.number().int(),
        invalid: z.number().int(),
        not_found: z.number().int(),
        would_drop: z
          .number()
          .int()
          .describe("What `rpki_policy: drop_invalid` would leave out of the revision: the invalid prefixes, never the not-found ones."),
        invalid_prefixes: z.array(RpkiInvalidPrefix).describe("The first 1000 invalid prefixes."),
      }),
    ),
  })
  .meta({
    id: "RpkiDryRun",
    description: "What RPKI origin validation of the modules' current snapshots finds and what `drop_invalid` would drop; no job, no revision.",
  });
export type RpkiDryRun = z.infer<typeof RpkiDryRun>;
