import { CopyButton } from "./enrollment.js";

/** A secret the API answers once (a new or rotated API key): shown here, never again. */
export function SecretOnce(props: { title: string; secret: string; onDone: () => void; note?: string }) {
  return (
    <section class="card secret" aria-label={props.title} data-testid="secret">
      <h2>{props.title}</h2>
      <p>
        Shown <strong>once</strong>: the controller keeps only its hash. {props.note ?? ""}
      </p>
      <label for="secret-value">Secret</label>
      <input id="secret-value" class="mono" readOnly value={props.secret} data-testid="secret-value" />
      <div class="row">
        <CopyButton text={props.secret} label="Copy the secret" testId="copy-secret" />
        <button type="button" onClick={props.onDone}>
          I have copied it
        </button>
      </div>
    </section>
  );
}
