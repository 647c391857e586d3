-- A stored bundle carries the peers' passwords in plain text inside its signed payload, so the
-- envelope is kept sealed with the data key like every other stored secret. It is sealed as a
-- run of independently sealed pieces of `envelope_chunk` plain bytes each (nonce, tag,
-- ciphertext; the last piece shorter), so GetBundle can still read and open one piece at a time
-- at an offset it computes. Size and SHA-256 of the plain envelope are kept beside it: the
-- database can no longer work them out from the stored bytes. Rows written before this stay
-- plain (envelope_sealed false) and are sealed when their bundle is issued again.
ALTER TABLE bundles
  ADD COLUMN envelope_sealed boolean NOT NULL DEFAULT false,
  ADD COLUMN envelope_chunk integer,
  ADD COLUMN envelope_size integer,
  ADD COLUMN envelope_sha256 text,
  ADD CONSTRAINT bundles_envelope_sealed_layout
    CHECK (NOT envelope_sealed OR (envelope_chunk > 0 AND envelope_size IS NOT NULL AND envelope_sha256 IS NOT NULL));
