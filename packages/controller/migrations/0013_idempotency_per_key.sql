-- Stored Idempotency-Key answers belong to the API key that made them (a key of a lower role
-- must never be handed a higher role's answer), remember that key's role, and hold their body
-- sealed with the data key (answers carry new API-key secrets and enrollment tokens). The rows
-- kept so far are tenant-wide and in plain text: they are dropped (they last 24 hours anyway).
DELETE FROM idempotency_keys;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD COLUMN api_key_id uuid NOT NULL;
ALTER TABLE idempotency_keys ADD COLUMN role text NOT NULL;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (tenant_id, api_key_id, key);
