-- A big section body (33 MB sealed for 1.2M prefixes) was written in one statement: the driver
-- sends a bytea parameter as hex text, and encoding 33 MB of it (hex, then UTF-8) held the
-- controller's event loop for 0.75 s on a quiet machine, 1-3 s under load, a few seconds after
-- a refresh's commit (lookups, gRPC streams and heartbeats stalled meanwhile). Now such a body
-- is written here ~1 MiB a statement (`part` from 0), the event loop running between them, and
-- one statement then assembles the parts into `bundle_sections.body` and deletes them: a reader
-- sees the body NULL (opened from its base and delta) or whole, never half. `writer` tells one
-- write's parts from another's (two replicas may write the same section's body at once; their
-- sealed bytes differ), so an assembly takes only its own and checks they are all there. Parts
-- left by a process that stopped mid-write are deleted by the next write of the section and go
-- with the section row (a prune).
CREATE TABLE bundle_section_parts (
  tenant_id         uuid NOT NULL,
  revision_id       integer NOT NULL,
  base_revision_id  integer NOT NULL,
  writer            uuid NOT NULL,
  part              integer NOT NULL CHECK (part >= 0),
  bytes             bytea NOT NULL,
  PRIMARY KEY (tenant_id, revision_id, base_revision_id, writer, part),
  FOREIGN KEY (tenant_id, revision_id, base_revision_id) REFERENCES bundle_sections (tenant_id, revision_id, base_revision_id) ON DELETE CASCADE
);
