import { generateKeyPair, randomBytes, X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { promisify } from "node:util";
import { isSelfSigned, publicRootHashes, spkiHash } from "@rlc/shared";
import forge from "node-forge";
import { ConfigError } from "../config.js";
import type { Db } from "../db/connect.js";
import { findGrpcTls, insertGrpcTls } from "../db/grpc-tls.js";
import type { SecretBox } from "../lib/secret-box.js";

/** What the agents' listeners (gRPC, node HTTPS) serve and what the enrollment tokens pin. */
export interface GrpcTlsMaterial {
  /** PEM chain: the server certificate, then the CA that the hash names. */
  cert: Buffer;
  key: Buffer;
  /** `sha256:<hex>` of the pinned certificate's SubjectPublicKeyInfo (kubeadm's discovery hash). */
  caHash: string;
  source: "configured" | "generated";
  /** What the hash names: a CA of the controller's own, or (GRPC_TLS_PIN=leaf) the server certificate. */
  pinned: GrpcTlsPin;
}

/** GRPC_TLS_PIN. */
export type GrpcTlsPin = "ca" | "leaf";

/**
 * The certificate of a configured chain that agents pin. With `ca`, the chain's last one, which
 * must be a CA of the controller's own: self-signed and not a public root. A pin on a public CA
 * (an intermediate, which is not self-signed, or a root) trusts every certificate it issues, to
 * anyone, and agents compare no host name; so such a chain stops the start rather than hand out
 * tokens that pin it. With `leaf`, the server certificate itself (agents then trust that
 * certificate alone; a renewed one must keep its key, see docs/security.md).
 */
export function pinnedOfChain(chain: string[], pin: GrpcTlsPin, publicRoots: ReadonlySet<string>): string {
  if (pin === "leaf") return chain[0]!;
  const pem = chain[chain.length - 1]!;
  const last = new X509Certificate(pem);
  const problem = !last.ca
    ? "is not a CA"
    : !isSelfSigned(last)
      ? "is not self-signed (an intermediate CA)"
      : publicRoots.has(spkiHash(last))
        ? "is a public root CA"
        : null;
  if (!problem) return pem;
  throw new ConfigError(
    `invalid configuration:\n  GRPC_TLS_CERT: the chain's last certificate (${last.subject.replaceAll("\n", ", ")}) ${problem}: agents pinning it would trust ` +
      "every certificate it issues. Put a CA of the controller's own last in the file, or set GRPC_TLS_PIN=leaf to pin the server certificate itself, " +
      "or unset GRPC_TLS_CERT and GRPC_TLS_KEY for the controller's own CA",
  );
}

/** The certificates of a PEM bundle, in order. */
export function pemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * The TLS material of the agents' listeners. Configured files (GRPC_TLS_CERT, GRPC_TLS_KEY) win;
 * what agents pin is then chosen by `pin` ({@link pinnedOfChain}). Otherwise the controller's
 * own CA and certificate, made once and kept in the database so every replica serves the same.
 */
export async function loadGrpcTls(opts: {
  sql: Db;
  secretBox: SecretBox;
  files: { certFile: string; keyFile: string } | null;
  /** Names put in the generated certificate besides localhost and this host's name. */
  names: string[];
  now: Date;
  /** GRPC_TLS_PIN, for configured files; default `ca`. */
  pin?: GrpcTlsPin;
}): Promise<GrpcTlsMaterial> {
  if (opts.files) {
    const [cert, key] = await Promise.all([readFile(opts.files.certFile), readFile(opts.files.keyFile)]);
    const chain = pemCertificates(cert.toString("utf8"));
    if (chain.length === 0) throw new Error(`GRPC_TLS_CERT ${opts.files.certFile} holds no PEM certificate`);
    const pin = opts.pin ?? "ca";
    return { cert, key, caHash: spkiHash(pinnedOfChain(chain, pin, publicRootHashes())), source: "configured", pinned: pin };
  }
  const row =
    (await findGrpcTls(opts.sql)) ??
    (await insertGrpcTls(opts.sql, { ...(await makeCaAndServerCert(opts.names, opts.now, opts.secretBox)), created_at: opts.now }));
  return {
    cert: Buffer.from(`${row.cert_pem.trim()}\n${row.ca_pem.trim()}\n`),
    key: opts.secretBox.open(row.key_sealed),
    caHash: spkiHash(row.ca_pem),
    source: "generated",
    pinned: "ca",
  };
}

const TEN_YEARS_MS = 10 * 365 * 24 * 3600_000;

async function rsaPair() {
  const { publicKey, privateKey } = await promisify(generateKeyPair)("rsa", { modulusLength: 2048 });
  return {
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: "spki", format: "pem" }).toString()),
    privateKey: forge.pki.privateKeyFromPem(privateKey.export({ type: "pkcs1", format: "pem" }).toString()),
    privatePem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

const serial = () => `01${randomBytes(15).toString("hex")}`;
const isIp = (name: string) => /^[0-9.]+$/.test(name) || name.includes(":");

/**
 * A CA (10 years, path length 0) and a server certificate it signs (10 years, serverAuth, the
 * given names). The CA's private key is dropped once it signed: nothing else is ever issued.
 */
async function makeCaAndServerCert(names: string[], now: Date, box: SecretBox) {
  const [caKeys, serverKeys] = await Promise.all([rsaPair(), rsaPair()]);
  const notBefore = new Date(now.getTime() - 3600_000);
  const notAfter = new Date(now.getTime() + TEN_YEARS_MS);

  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serial();
  ca.validity.notBefore = notBefore;
  ca.validity.notAfter = notAfter;
  const caName = [{ name: "commonName", value: `route-list controller CA ${randomBytes(4).toString("hex")}` }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const unique = [...new Set(["localhost", "127.0.0.1", "::1", hostname(), ...names].filter(Boolean))];
  const server = forge.pki.createCertificate();
  server.publicKey = serverKeys.publicKey;
  server.serialNumber = serial();
  server.validity.notBefore = notBefore;
  server.validity.notAfter = notAfter;
  server.setSubject([{ name: "commonName", value: "route-list controller" }]);
  server.setIssuer(caName);
  server.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: unique.map((n) => (isIp(n) ? { type: 7, ip: n } : { type: 2, value: n })) },
    { name: "authorityKeyIdentifier", keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  server.sign(caKeys.privateKey, forge.md.sha256.create());

  return { ca_pem: forge.pki.certificateToPem(ca), cert_pem: forge.pki.certificateToPem(server), key_sealed: box.seal(serverKeys.privatePem) };
}
