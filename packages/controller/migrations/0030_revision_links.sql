-- A revision is stored whole when its chain of changes is full (chain_depth, chain_changes in
-- 0025). Two revisions on either side of such a one shared no chain, and a diff of them read
-- both contents whole: 0.7 s cold at 1.2M prefixes for two revisions 1 % apart. A revision
-- stored whole for that reason keeps, when it is a small change of its parent, that change as
-- well: a diff walks through it. Nothing reads a content through it (the content is whole), so
-- no foreign key holds the parent: a prune clears the links to what it deletes, and a link left
-- by a controller older than this migration to a deleted revision only ends a diff's walk
-- (revision ids are never taken again). Older controllers neither write nor read the columns.
ALTER TABLE revisions ADD COLUMN link_parent_id integer, ADD COLUMN link_change bytea;
