-- gRPC GetBundle reads a bundle in slices (substring) rather than whole. PostgreSQL fetches
-- only the slices' TOAST chunks when the value is stored uncompressed; compressed, every slice
-- would decompress the whole envelope. Rows written before this keep their storage until their
-- bundle is issued again.
ALTER TABLE bundles ALTER COLUMN envelope SET STORAGE EXTERNAL;
