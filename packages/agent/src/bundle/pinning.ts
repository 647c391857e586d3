import { X509Certificate } from "node:crypto";
import { connect, createSecureContext, type PeerCertificate } from "node:tls";
import { grpc } from "@rlc/proto";
import { isSelfSigned, publicRootHashes, spkiHash } from "@rlc/shared";
import { Agent, fetch as undiciFetch } from "undici";
import { ControllerError } from "./http-client.js";

/**
 * Trust in the controller, kubeadm's way: the enrollment token carries the SHA-256 of the
 * controller CA's public key (SubjectPublicKeyInfo); the agent takes the CA from the chain the
 * controller presents only if its hash matches, and from then on trusts that CA alone, for
 * gRPC and HTTPS. The pin, not the host name, says who the controller is: the CA the
 * controller makes signs nothing but its own server certificate. A controller with a certificate
 * of another CA (GRPC_TLS_PIN=leaf) has its server certificate itself pinned instead.
 */

const PIN = /^sha256:[0-9a-f]{64}$/;

/**
 * The pin: RL_CA_HASH, or the part of the token after its last dot (`rlt_<secret>.<hex>`).
 * Both given and different is a mistake worth stopping for.
 */
export function pinOf(token: string | undefined, configured: string | undefined): string | null {
  const m = token ? /\.([0-9a-f]{64})$/i.exec(token) : null;
  const fromToken = m ? `sha256:${m[1]!.toLowerCase()}` : null;
  const fromConfig = configured?.toLowerCase() ?? null;
  if (fromToken && fromConfig && fromToken !== fromConfig) {
    throw new ControllerError("untrusted_controller", "RL_CA_HASH differs from the CA hash the enrollment token carries");
  }
  const pin = fromConfig ?? fromToken;
  return pin && PIN.test(pin) ? pin : null;
}

/**
 * Connects to `host:port` over TLS without trusting anything yet, and answers the PEM of the
 * certificate in the presented chain whose public key matches `pin`, once the server's own
 * certificate is shown to descend from it (each certificate signed by the next). Anything else
 * is refused: the controller is not the one the token was issued by. So is a pin on a CA that
 * vouches for others too: one that is not self-signed (an intermediate) or a public root, which
 * would let any certificate it issued to anyone pass for the controller (no host name is
 * compared); the pin must name the controller's own CA or its own certificate.
 */
export function fetchPinnedCa(host: string, port: number, pin: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const fail = (message: string, cause?: unknown) => {
      socket.destroy();
      reject(new ControllerError(cause ? "controller_unreachable" : "untrusted_controller", `${host}:${port}: ${message}`, { cause }));
    };
    const socket = connect(
      { host, port, servername: /^[0-9.]+$|:/.test(host) ? undefined : host, rejectUnauthorized: false, ALPNProtocols: ["h2", "http/1.1"] },
      () => {
        const chain: X509Certificate[] = [];
        let at: PeerCertificate | undefined = socket.getPeerCertificate(true);
        for (let i = 0; i < 10 && at?.raw; i++) {
          chain.push(new X509Certificate(at.raw));
          const next: PeerCertificate | undefined = (at as { issuerCertificate?: PeerCertificate }).issuerCertificate;
          if (!next || next === at || next.fingerprint256 === at.fingerprint256) break;
          at = next;
        }
        socket.end();
        const index = chain.findIndex((c) => spkiHash(c) === pin);
        if (index < 0) return fail(`no certificate in the controller's chain matches the CA hash ${pin}`);
        const pinned = chain[index]!;
        if (index > 0 && (!isSelfSigned(pinned) || publicRootHashes().has(pin))) {
          return fail(
            `the CA hash names ${pinned.subject.replaceAll("\n", ", ")}, ${isSelfSigned(pinned) ? "a public root CA" : "an intermediate CA"}, ` +
              "which vouches for certificates issued to others: pin the controller's own CA or its own certificate",
          );
        }
        const now = Date.now();
        for (let i = 0; i < index; i++) {
          if (!chain[i]!.verify(chain[i + 1]!.publicKey)) return fail("the controller's certificate chain is not signed by the pinned CA");
        }
        for (const c of chain.slice(0, index + 1)) {
          if (Date.parse(c.validFrom) > now || Date.parse(c.validTo) < now) return fail(`certificate ${c.subject.replaceAll("\n", ", ")} is not valid now`);
        }
        resolve(chain[index]!.toString());
      },
    );
    socket.setTimeout(timeoutMs, () => fail("TLS handshake timed out", new Error("timeout")));
    socket.once("error", (error) => fail(error.message, error));
  });
}

// Names are not compared: the pinned CA is the controller's identity (see above).
const noNameCheck = () => undefined;

/**
 * How TLS trusts the pinned certificate and nothing else. A CA is a trust anchor as it is; the
 * controller's own certificate (a leaf pin) is one only as a partial chain, which then matches
 * that very certificate and nothing it did not sign (a leaf signs nothing). An intermediate is
 * never taken as a partial anchor: that would trust all it issues ({@link fetchPinnedCa}).
 */
function pinnedTrust(pem: string) {
  return { ca: pem, allowPartialTrustChain: !new X509Certificate(pem).ca };
}

/** gRPC channel credentials that trust the pinned certificate and nothing else. */
export function pinnedGrpcCredentials(caPem: string): grpc.ChannelCredentials {
  return grpc.credentials.createFromSecureContext(createSecureContext(pinnedTrust(caPem)), { checkServerIdentity: noNameCheck });
}

/** `fetch` for HTTPS that trusts the pinned certificate and nothing else. */
export function pinnedFetch(caPem: string): typeof fetch {
  const dispatcher = new Agent({ connect: { ...pinnedTrust(caPem), checkServerIdentity: noNameCheck } });
  return ((input: string | URL, init?: RequestInit) => undiciFetch(input as string, { ...(init as object), dispatcher } as never)) as unknown as typeof fetch;
}

/** `host` and `port` of an https:// URL or a `host:port` gRPC target. */
export function endpointOf(target: string): { host: string; port: number } {
  if (/^https?:\/\//.test(target)) {
    const u = new URL(target);
    return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || (u.protocol === "https:" ? 443 : 80)) };
  }
  const i = target.lastIndexOf(":");
  return { host: target.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(target.slice(i + 1)) };
}
