import { useState } from "preact/hooks";
import { ok } from "../api.js";
import { useSession } from "../session.js";
import { useLoad } from "../ui.js";

/** Copies `text` to the clipboard and says so beside the button. */
export function CopyButton(props: { text: string; label: string; testId?: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <span class="action">
      <button
        type="button"
        data-testid={props.testId}
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(props.text);
            setDone("Copied.");
          } catch {
            setDone("The browser refused the clipboard: select the text and copy it.");
          }
        }}
      >
        {props.label}
      </button>
      <span role="status" class="muted small">
        {done ?? ""}
      </span>
    </span>
  );
}

/**
 * A new enrollment token, shown once (the API keeps only its hash), with what to run on the
 * router: the agent's .deb, its agent.env, and the restart that enrolls it. The agents talk to
 * the controller's HTTPS listener (NODE_HTTPS_PORT, 8443 by default) on this host.
 */
export function EnrollmentPanel(props: { speakerName: string; token: string; expiresAt: string | null; onDone: () => void }) {
  const { api } = useSession();
  const version = useLoad(() => ok(api.GET("/v1/version", {})), []);
  const v = version.data?.version ?? "<version>";
  const controller = `https://${window.location.hostname}:8443`;
  const install = [
    `sudo apt install ./rl-agent_${v}_amd64.deb`,
    "sudoedit /etc/rl-agent/agent.env    # the two lines below",
    "sudo systemctl restart rl-agent      # enrolls, then keeps BIRD in sync",
    "rl-agent status",
  ].join("\n");
  const env = [`RL_CONTROLLER_URL=${controller}`, `RL_ENROLLMENT_TOKEN=${props.token}`].join("\n");
  return (
    <section class="card secret" aria-label={`Enrollment of ${props.speakerName}`} data-testid="enrollment">
      <h2>Enroll {props.speakerName}</h2>
      <p>
        This token is shown <strong>once</strong>
        {props.expiresAt ? ` and expires ${new Date(props.expiresAt).toLocaleString()}` : ""}. The router's agent spends it to get its own key.
      </p>
      <label for="enrollment-token">Enrollment token</label>
      <input id="enrollment-token" class="mono" readOnly value={props.token} data-testid="enrollment-token" />
      <CopyButton text={props.token} label="Copy token" testId="copy-token" />
      <h3>On the router (Debian, BIRD 2 or 3)</h3>
      <pre data-testid="install-snippet">{install}</pre>
      <CopyButton text={install} label="Copy the install commands" />
      <h3>/etc/rl-agent/agent.env</h3>
      <pre data-testid="agent-env">{env}</pre>
      <CopyButton text={env} label="Copy agent.env" testId="copy-env" />
      <p>
        <button type="button" onClick={props.onDone}>
          I have copied it
        </button>
      </p>
    </section>
  );
}
