import { createHash, X509Certificate } from "node:crypto";
import { rootCertificates } from "node:tls";

/**
 * `sha256:<hex>` of a certificate's public key (SubjectPublicKeyInfo, DER; kubeadm's discovery
 * hash): stable across re-issues with the same key. The controller puts it in enrollment tokens;
 * the agent finds the CA with it in the chain the controller presents.
 */
export function spkiHash(cert: X509Certificate | string): string {
  const x509 = typeof cert === "string" ? new X509Certificate(cert) : cert;
  return `sha256:${createHash("sha256")
    .update(x509.publicKey.export({ type: "spki", format: "der" }))
    .digest("hex")}`;
}

/** A certificate that names itself as its issuer and carries its own valid signature (a root). */
export function isSelfSigned(cert: X509Certificate): boolean {
  return cert.checkIssued(cert) && cert.verify(cert.publicKey);
}

/**
 * The {@link spkiHash}es of the public root CAs Node trusts by default (Mozilla's list). A pin
 * on one of them would trust every certificate that CA ever issued, to anyone; worked out when
 * asked (a few milliseconds), at start and at enrollment only.
 */
export function publicRootHashes(): Set<string> {
  return new Set(rootCertificates.map((pem) => spkiHash(pem)));
}
