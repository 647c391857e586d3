-- Each BGP session state change a speaker's status report shows, kept so that the console and
-- `GET /v1/speakers/{speaker_id}/sessions/history` can draw when a router's sessions went down
-- and came back (issue 31). The same changes are published as `…speakers.<id>.session` events,
-- but the bus may be the in-memory one (the embedded default has no NATS) and an event stream
-- is not a query: the table is the history the API reads. A row is written as the report that
-- shows the change is received; rows older than 30 days are deleted as new ones are written for
-- the speaker, and all of a speaker's go with it.
CREATE TABLE speaker_session_changes (
  id                  uuid PRIMARY KEY,
  tenant_id           uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  speaker_id          uuid NOT NULL REFERENCES speakers(id) ON DELETE CASCADE,
  at                  timestamptz NOT NULL,
  protocol            text NOT NULL,
  -- As the report names them: the peer may be deleted since, so no foreign key.
  peer_id             text,
  neighbor_address    text,
  -- NULL previous_state: the session appeared; NULL state: it went away.
  previous_state      text,
  previous_bgp_state  text,
  state               text,
  bgp_state           text,
  since               text,
  last_error          text
);
CREATE INDEX speaker_session_changes_speaker_at ON speaker_session_changes (tenant_id, speaker_id, at, id);
