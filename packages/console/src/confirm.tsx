import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { ErrorBox, useRun } from "./ui.js";

/**
 * A destructive action that asks once: the first press shows the question with "Yes" and
 * "Cancel" in its place (focus moves to "Cancel", Escape cancels); only "Yes" runs it.
 */
export function ConfirmButton(props: { label: string; question: string; yes?: string; action: () => Promise<unknown>; testId?: string }) {
  const [asking, setAsking] = useState(false);
  const { busy, error, run } = useRun();
  const cancel = useRef<HTMLButtonElement>(null);
  // Before the browser paints or takes a key: the question's "Yes" takes the place (and, diffed,
  // the element) of the button that had focus, so an Enter pressed at once would delete.
  useLayoutEffect(() => {
    if (asking) cancel.current?.focus();
  }, [asking]);
  if (!asking)
    return (
      <span class="action" key="ask">
        <button type="button" class="danger" data-testid={props.testId} onClick={() => setAsking(true)}>
          {props.label}
        </button>
        <ErrorBox error={error} />
      </span>
    );
  return (
    // biome-ignore lint/a11y/useSemanticElements: an inline question beside its row, not a modal dialog
    <span class="confirm" key="asking" role="group" aria-label={props.question} onKeyDown={(e) => e.key === "Escape" && setAsking(false)}>
      <span>{props.question}</span>{" "}
      <button type="button" class="danger" disabled={busy} onClick={() => run(props.action, () => setAsking(false))}>
        {busy ? "…" : (props.yes ?? `Yes, ${props.label.toLowerCase()}`)}
      </button>{" "}
      <button type="button" ref={cancel} onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
