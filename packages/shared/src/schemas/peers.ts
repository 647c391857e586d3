import { isIP } from "node:net";
import { z } from "zod";
import { listQuery, optionalFields, timestamps, Uuid } from "./common.js";
import { Asn } from "./speakers.js";

const Multihop = z.union([z.boolean(), z.number().int().min(1).max(255)]);
const Families = z
  .array(z.enum(["ipv4", "ipv6"]))
  .min(1)
  .max(2);

export const Peer = z
  .object({
    id: Uuid,
    name: z.string(),
    neighbor_address: z.string(),
    neighbor_port: z.number().int(),
    remote_asn: z.number().int(),
    local_asn: z.number().int().nullable(),
    description: z.string(),
    enabled: z.boolean(),
    password_set: z.boolean().describe("Whether a TCP-MD5 password is set; the password itself is write-only."),
    multihop: Multihop,
    address_families: Families,
    export_community_ids: z.array(Uuid),
    speaker_ids: z.array(Uuid),
    connected_speaker_id: Uuid.nullable(),
    connected_speaker_label: z.string().nullable(),
    session_on_speakers: z.array(Uuid),
    established_on_speakers: z.array(Uuid),
    session_mismatch: z.boolean(),
    ...timestamps,
  })
  .meta({ id: "Peer" });

export const PeerWithJob = Peer.extend({ reconcile_job_id: Uuid }).meta({ id: "PeerWithReconcileJob" });
export const PeerDeleted = z.object({ id: Uuid, reconcile_job_id: Uuid }).meta({ id: "PeerDeleted" });

const fields = {
  name: z.string().trim().min(1).max(64),
  neighbor_address: z.string().refine((v) => isIP(v) !== 0, "must be an IPv4 or IPv6 address"),
  neighbor_port: z.number().int().min(1).max(65535),
  remote_asn: Asn,
  local_asn: Asn.nullable(),
  description: z.string().max(512),
  enabled: z.boolean(),
  password: z
    .string()
    .min(1)
    .max(80)
    .regex(/^[\x20-\x7e]*$/, "printable ASCII only")
    .refine((v) => !v.includes('"'), "must not contain a double quote")
    .nullable()
    .describe(
      "TCP-MD5 password (write-only): stored sealed, never read back, carried only in the signed bundles of the peer's speakers; null removes it. " +
        "It is bound to the neighbor: an update that changes `neighbor_address` drops the stored password unless the same request sends `password` again.",
    ),
  multihop: Multihop,
  address_families: Families,
  export_community_ids: z.array(Uuid).max(1000),
  speaker_ids: z.array(Uuid).max(1000),
};

export const CreatePeerBody = z.strictObject({
  name: fields.name,
  neighbor_address: fields.neighbor_address,
  neighbor_port: fields.neighbor_port.default(179),
  remote_asn: fields.remote_asn,
  local_asn: fields.local_asn.optional(),
  description: fields.description.optional(),
  enabled: fields.enabled.default(true),
  password: fields.password.optional(),
  multihop: fields.multihop.default(false),
  address_families: fields.address_families.default(["ipv4", "ipv6"]),
  export_community_ids: fields.export_community_ids.default([]),
  speaker_ids: fields.speaker_ids.default([]),
});

export const UpdatePeerBody = z.strictObject(optionalFields(fields));

export const PeerListQuery = listQuery();
