import { useState } from "preact/hooks";

/** A select in its label; `any`, when given, labels an empty first option (a filter that is off). */
export function Choice(props: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  /** Options whose text is their value, or `[value, text]`. */
  options: readonly (string | readonly [string, string])[];
  name?: string;
  any?: string;
}) {
  return (
    <label>
      {props.label}
      <select name={props.name} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.any === undefined ? null : <option value="">{props.any}</option>}
        {props.options.map((o) =>
          typeof o === "string" ? (
            <option key={o}>{o}</option>
          ) : (
            <option key={o[0]} value={o[0]}>
              {o[1]}
            </option>
          ),
        )}
      </select>
    </label>
  );
}

/**
 * The submit handlers of a page's forms: each stops the browser's own submit, runs its action
 * and keeps the action's error (one error for the page's forms, shown where the page puts it).
 */
export function useSubmit() {
  const [error, setError] = useState<Error | null>(null);
  const submit = (action: () => Promise<unknown>, onError?: () => void) => async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(err as Error);
      onError?.();
    }
  };
  return { error, submit };
}
