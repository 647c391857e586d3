import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Loaded<T> {
  data: T | undefined;
  error: Error | null;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `deps` change (and on reload); the last answer wins. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (error: Error) => mine === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function ErrorBox({ error }: { error: Error | null | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="page">
      <header class="page-head">
        <h1>{props.title}</h1>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

/** "3 s ago", "5 min ago" (title: the exact time). */
export function Ago({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">never</span>;
  const s = Math.max(0, Math.round((Date.now() - Date.parse(at)) / 1000));
  const text =
    s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : s < 86400 ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86400)} d ago`;
  return <time title={at}>{text}</time>;
}

export function Badge({ tone, children }: { tone: "ok" | "warn" | "bad" | "info"; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

/**
 * An action run once at a time: `busy` while it runs, its error kept until the next run;
 * `after` runs when it has ended either way; `reset` forgets the error.
 */
export function useRun() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const run = async (action: () => Promise<unknown>, after?: () => void) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
      after?.();
    }
  };
  return { busy, error, run, reset: () => setError(null) };
}

/** A button that runs `action` once at a time and shows its error beside itself. */
export function ActionButton(props: { label: string; busyLabel?: string; action: () => Promise<unknown>; kind?: "primary" | "danger"; testId?: string }) {
  const { busy, error, run } = useRun();
  return (
    <span class="action">
      <button type="button" class={props.kind ?? ""} disabled={busy} data-testid={props.testId} onClick={() => run(props.action)}>
        {busy ? (props.busyLabel ?? "…") : props.label}
      </button>
      <ErrorBox error={error} />
    </span>
  );
}

/** A button that opens and closes what it names (a form below it): `aria-expanded` says which. */
export function ToggleButton(props: { label: string; open: boolean; onToggle: (open: boolean) => void }) {
  return (
    <button type="button" aria-expanded={props.open} onClick={() => props.onToggle(!props.open)}>
      {props.label}
    </button>
  );
}
