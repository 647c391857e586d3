-- Lists as ISPs keep them (issue 26): AS entries that name an AS-SET, expanded through an IRR
-- server at each refresh, and RPKI origin validation of what AS entries announce.

-- An AS entry holds an ASN or an AS-SET name (`AS-EXAMPLE`, `AS64500:AS-CUSTOMERS`,
-- `RIPE::AS-EXAMPLE`, stored upper case), never both.
ALTER TABLE as_entries ALTER COLUMN asn DROP NOT NULL;
ALTER TABLE as_entries ADD COLUMN as_set text CHECK (char_length(as_set) BETWEEN 4 AND 255);
ALTER TABLE as_entries ADD CONSTRAINT as_entries_asn_or_as_set CHECK ((asn IS NULL) <> (as_set IS NULL));
ALTER TABLE as_entries ADD CONSTRAINT as_entries_module_as_set UNIQUE (module_id, as_set);

-- A member ASN of an AS-SET keeps `source` 'asn' and its ASN as `origin`, and names the set in
-- `via` ('' for an ASN entered as itself): the same ASN may come as itself and through sets,
-- each a row of its own, so that a failed expansion keeps exactly that set's last members.
ALTER TABLE snapshots ADD COLUMN via text NOT NULL DEFAULT '';
ALTER TABLE snapshots DROP CONSTRAINT snapshots_pkey;
ALTER TABLE snapshots ADD PRIMARY KEY (module_id, source, origin, via);

-- `off`: prefixes are not validated; `report`: validated and counted; `drop_invalid`: RPKI-invalid
-- prefixes of AS entries are left out of the revision.
ALTER TABLE modules ADD COLUMN rpki_policy text NOT NULL DEFAULT 'off' CHECK (rpki_policy IN ('off', 'report', 'drop_invalid'));
