-- Speakers (routers running rl-agent, or the controller's own BIRD), their peers, one-time
-- enrollment tokens, the bundle signing keys and the signed bundles issued per speaker.

CREATE TABLE speakers (
  id                   uuid PRIMARY KEY,
  tenant_id            uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name                 text NOT NULL,
  mode                 text NOT NULL CHECK (mode IN ('remote', 'local')),
  hostname             text,
  router_id            text NOT NULL,
  asn                  bigint NOT NULL CHECK (asn BETWEEN 1 AND 4294967295),
  policies_json        jsonb NOT NULL DEFAULT '{}'::jsonb,
  metadata             jsonb NOT NULL DEFAULT '{}'::jsonb,
  enrolled_at          timestamptz,
  last_seen_at         timestamptz,
  agent_version        text,
  desired_revision_id  integer,
  applied_revision_id  integer,
  applied_sequence     bigint,
  applied_at           timestamptz,
  dispatch_status      text NOT NULL DEFAULT 'idle' CHECK (dispatch_status IN ('idle', 'pending', 'dispatched', 'failed')),
  last_error           jsonb,
  -- The agent's last report (bird info and BGP sessions) and when it came.
  last_report          jsonb,
  last_report_at       timestamptz,
  -- The sequence of the last bundle issued for this speaker (counts up with every bundle).
  bundle_sequence      bigint NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  UNIQUE (tenant_id, name),
  UNIQUE (tenant_id, id)
);

CREATE TABLE enrollment_tokens (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  speaker_id  uuid NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
  token_hash  bytea NOT NULL UNIQUE,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  created_at  timestamptz NOT NULL
);

CREATE TABLE peers (
  id                    uuid PRIMARY KEY,
  tenant_id             uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name                  text NOT NULL,
  neighbor_address      text NOT NULL,
  neighbor_port         integer NOT NULL DEFAULT 179 CHECK (neighbor_port BETWEEN 1 AND 65535),
  remote_asn            bigint NOT NULL CHECK (remote_asn BETWEEN 1 AND 4294967295),
  local_asn             bigint CHECK (local_asn BETWEEN 1 AND 4294967295),
  description           text NOT NULL DEFAULT '',
  enabled               boolean NOT NULL DEFAULT true,
  -- Write-only in the API; it travels only inside the signed bundle of the speakers concerned.
  password              text,
  -- false, true (BIRD's default TTL) or a TTL 1..255.
  multihop              jsonb NOT NULL DEFAULT 'false'::jsonb,
  address_families      text[] NOT NULL DEFAULT ARRAY['ipv4', 'ipv6'],
  export_community_ids  uuid[] NOT NULL DEFAULT '{}',
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL,
  UNIQUE (tenant_id, name),
  UNIQUE (tenant_id, id)
);

CREATE TABLE peer_speakers (
  tenant_id   uuid NOT NULL,
  peer_id     uuid NOT NULL REFERENCES peers(id) ON DELETE CASCADE,
  speaker_id  uuid NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
  PRIMARY KEY (peer_id, speaker_id)
);
CREATE INDEX peer_speakers_speaker ON peer_speakers (speaker_id);

-- Deployment-wide Ed25519 keys. The active one signs; retired ones stay listed so agents can
-- follow a rotation's statement chain.
CREATE TABLE signing_keys (
  key_id      text PRIMARY KEY,
  public_key  bytea NOT NULL,
  seed        bytea,
  status      text NOT NULL CHECK (status IN ('active', 'retired')),
  statement   jsonb,
  created_at  timestamptz NOT NULL,
  retired_at  timestamptz
);
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active';

-- The newest signed bundle per (speaker, revision): agents fetch these bytes as they are.
CREATE TABLE bundles (
  tenant_id    uuid NOT NULL,
  speaker_id   uuid NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
  revision_id  integer NOT NULL,
  sequence     bigint NOT NULL,
  digest       text NOT NULL,
  issued_at    timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  envelope     bytea NOT NULL,
  PRIMARY KEY (speaker_id, revision_id)
);
