import { z } from "zod";
import { listQuery, optionalFields, timestamps, Uuid } from "./common.js";
import { nonEmptyText, storableText } from "./text.js";

export const Community = z
  .object({
    id: Uuid,
    community: z.string().describe("Canonical: `ASN:VALUE` (each 0..65535) or large `ASN:V1:V2` (each 0..4294967295), no leading zeros."),
    title: z.string(),
    description: z.string(),
    ...timestamps,
  })
  .meta({ id: "Community" });
export type Community = z.infer<typeof Community>;

const communityFields = {
  community: nonEmptyText(64)
    .describe("Standard `ASN:VALUE` (each 0..65535) or large `ASN:V1:V2` (each 0..4294967295); stored without leading zeros.")
    .meta({ example: "65000:100" }),
  title: storableText().trim().max(128),
  description: storableText().max(1024),
};

export const CreateCommunityBody = z.strictObject({
  ...optionalFields(communityFields),
  community: communityFields.community,
  title: communityFields.title.optional().describe("Default empty."),
});
export type CreateCommunityBody = z.infer<typeof CreateCommunityBody>;

export const UpdateCommunityBody = z.strictObject(optionalFields(communityFields));
export type UpdateCommunityBody = z.infer<typeof UpdateCommunityBody>;

export const CommunityListQuery = listQuery({
  q: storableText().min(1).max(128).optional().describe("Community value or title contains (case-insensitive)."),
});
