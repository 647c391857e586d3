import type { Db } from "./connect.js";

export interface GrpcTlsRow {
  ca_pem: string;
  cert_pem: string;
  key_sealed: string;
}

export async function findGrpcTls(db: Db): Promise<GrpcTlsRow | undefined> {
  const [r] = await db<GrpcTlsRow[]>`SELECT ca_pem, cert_pem, key_sealed FROM grpc_tls WHERE id = 1`;
  return r;
}

/** Stores the material unless another replica stored its own first; answers the row that won. */
export async function insertGrpcTls(db: Db, row: GrpcTlsRow & { created_at: Date }): Promise<GrpcTlsRow> {
  await db`
    INSERT INTO grpc_tls (id, ca_pem, cert_pem, key_sealed, created_at)
    VALUES (1, ${row.ca_pem}, ${row.cert_pem}, ${row.key_sealed}, ${row.created_at})
    ON CONFLICT (id) DO NOTHING`;
  const stored = await findGrpcTls(db);
  if (!stored) throw new Error("grpc_tls row missing after insert");
  return stored;
}
