import { createHash, X509Certificate } from "node:crypto";

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
