-- gRPC GetBundle reads a bundle in slices (substring) rather than whole. PostgreSQL fetches
-- only the slices' TOAST chunks when the value is stored uncompressed; compressed, every slice
-- would decompress the whole envelope. Rows written before this keep their storage until their
-- bundle is issued again.
ALTER TABLE bundles ALTER COLUMN envelope SET STORAGE EXTERNAL;

-- The controller's own CA and gRPC server certificate, made at first start when GRPC_TLS_CERT
-- and GRPC_TLS_KEY are not given. One row, shared by every replica on this database, so all of
-- them present the certificate whose CA hash the enrollment tokens carry. The server key is
-- sealed with the data key; the CA's private key is not kept (it signs this one certificate).
CREATE TABLE grpc_tls (
  id          smallint PRIMARY KEY CHECK (id = 1),
  ca_pem      text NOT NULL,
  cert_pem    text NOT NULL,
  key_sealed  text NOT NULL,
  created_at  timestamptz NOT NULL
);
