import { z } from "zod";
import { ListQueryShape, Timestamp, Uuid } from "./common.js";
import { storableText } from "./text.js";

export const Community = z
  .object({
    id: Uuid,
    community: z.string().describe("Canonical: `ASN:VALUE` (each 0..65535) or large `ASN:V1:V2` (each 0..4294967295), no leading zeros."),
    title: z.string(),
    description: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: "Community" });

const CommunityValue = z
  .string()
  .min(1)
  .max(64)
  .describe("Standard `ASN:VALUE` (each 0..65535) or large `ASN:V1:V2` (each 0..4294967295); stored without leading zeros.")
  .meta({ example: "65000:100" });
const Title = storableText().trim().max(128);
const Description = storableText().max(1024);

export const CreateCommunityBody = z.strictObject({
  community: CommunityValue,
  title: Title.optional().describe("Default empty."),
  description: Description.optional(),
});

export const UpdateCommunityBody = z.strictObject({
  community: CommunityValue.optional(),
  title: Title.optional(),
  description: Description.optional(),
});

export const CommunityListQuery = z.strictObject({
  ...ListQueryShape,
  q: storableText().min(1).max(128).optional().describe("Community value or title contains (case-insensitive)."),
});

export type Community = z.infer<typeof Community>;
export type CreateCommunityBody = z.infer<typeof CreateCommunityBody>;
export type UpdateCommunityBody = z.infer<typeof UpdateCommunityBody>;
