-- Which data key sealed this database's secrets: an id (a hash of the key, never the key), so a
-- controller replica started with another key refuses to start instead of answering 500s when
-- it cannot open what the others sealed. One row, written by the first controller that starts.
CREATE TABLE data_key (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  key_id      text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
