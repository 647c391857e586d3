import type { ComponentChildren } from "preact";
import { createContext } from "preact";
import { useContext, useRef, useState } from "preact/hooks";
import { ApiError } from "./api.js";
import { ErrorBox, useRun } from "./ui.js";

/**
 * A form that sends one API call and shows the answer's problem+json beside the fields it names:
 * a 400 `validation_failed` lists `errors[]` with paths such as `body.router_id` or
 * `body.policies_json.local_port`; a field named `router_id` or `policies_json.local_port`
 * shows that message under itself, and the problem's detail shows above the submit button when
 * no field of the form is named (a 409 conflict, a 403).
 */
export interface ApiForm {
  id: string;
  busy: boolean;
  error: Error | null;
  fieldError(name: string): string | undefined;
  /** Names the fields rendered, so the form knows which errors none of them shows. */
  register(name: string): void;
  /** Whether some error of the answer names no field of the form (then the form shows it). */
  unplaced(): boolean;
  submit(action: () => Promise<unknown>): (e: Event) => Promise<void>;
  reset(): void;
}

const FormContext = createContext<ApiForm | null>(null);

function fieldErrors(error: Error | null): Map<string, string> {
  if (!(error instanceof ApiError) || typeof error.problem !== "object" || !error.problem) return new Map();
  return new Map((error.problem.errors ?? []).map((e) => [e.path.replace(/^body\.?/, ""), e.message]));
}

export function useApiForm(id: string): ApiForm {
  const { busy, error, run, reset } = useRun();
  const byField = fieldErrors(error);
  const names = useRef(new Set<string>()).current;
  return {
    id,
    busy,
    error,
    fieldError: (name) => byField.get(name),
    register: (name) => names.add(name),
    unplaced: () => byField.size === 0 || [...byField.keys()].some((k) => !names.has(k)),
    reset,
    submit: (action) => async (e) => {
      e.preventDefault();
      await run(action);
    },
  };
}

/** The <form>: its label, the fields, the submit button and the error no field shows. */
export function ApiFormView(props: {
  form: ApiForm;
  label: string;
  submit: string;
  action: () => Promise<unknown>;
  children: ComponentChildren;
  /** Shows a Cancel button beside the submit one (an edit form that closes without saving). */
  onCancel?: (() => void) | undefined;
  class?: string;
}) {
  const { form } = props;
  return (
    <FormContext.Provider value={form}>
      <form class={props.class ?? "card form"} aria-label={props.label} onSubmit={form.submit(props.action)}>
        {props.children}
        {form.error && form.unplaced() ? <ErrorBox error={form.error} /> : null}
        <div class="form-actions">
          <button type="submit" class="primary" disabled={form.busy}>
            {form.busy ? "…" : props.submit}
          </button>
          {props.onCancel ? (
            <button type="button" onClick={props.onCancel}>
              Cancel
            </button>
          ) : null}
        </div>
      </form>
    </FormContext.Provider>
  );
}

/** The constraints a field states (the API's schema: required, lengths, ranges, patterns). */
interface InputProps {
  type?: "text" | "number" | "password" | "url" | "datetime-local";
  required?: boolean;
  maxLength?: number;
  min?: number;
  max?: number;
  pattern?: string;
  placeholder?: string;
  autoComplete?: string;
  disabled?: boolean;
}

/** A labelled input whose API error (by field name) shows under it and is announced. */
export function Field(props: { label: string; name: string; value: string; onInput: (v: string) => void; hint?: string; input?: InputProps }) {
  const form = useContext(FormContext);
  const id = `${form?.id ?? "f"}-${props.name}`;
  form?.register(props.name);
  const message = form?.fieldError(props.name);
  const { type = "text", ...constraints } = props.input ?? {};
  const described = [props.hint ? `${id}-hint` : "", message ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        // The union of input types is checked per type by Preact's JSX; these are all plain fields.
        type={type as "text"}
        name={props.name}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        aria-invalid={message ? true : undefined}
        aria-describedby={described || undefined}
        {...constraints}
      />
      {props.hint ? (
        <small id={`${id}-hint`} class="muted">
          {props.hint}
        </small>
      ) : null}
      {message ? (
        <small id={`${id}-error`} class="error field-error" role="alert" data-field-error={props.name}>
          {message}
        </small>
      ) : null}
    </div>
  );
}

/** A checkbox in its label. */
export function Check(props: { label: string; name: string; checked: boolean; onChange: (v: boolean) => void }) {
  return (
    <label class="check">
      <input type="checkbox" name={props.name} checked={props.checked} onChange={(e) => props.onChange(e.currentTarget.checked)} /> {props.label}
    </label>
  );
}

/** A fieldset of checkboxes, one per option (`[value, label]`). */
export function CheckList(props: { legend: string; name: string; options: [string, string][]; value: string[]; onChange: (v: string[]) => void }) {
  const form = useContext(FormContext);
  form?.register(props.name);
  const message = form?.fieldError(props.name);
  return (
    <fieldset class="checklist" id={`${form?.id ?? "f"}-${props.name}`}>
      <legend>{props.legend}</legend>
      {props.options.length === 0 ? <span class="muted">none yet</span> : null}
      {props.options.map(([v, label]) => (
        <Check
          key={v}
          label={label}
          name={props.name}
          checked={props.value.includes(v)}
          onChange={(on) => props.onChange(on ? [...props.value, v] : props.value.filter((x) => x !== v))}
        />
      ))}
      {message ? (
        <small class="error field-error" role="alert" data-field-error={props.name}>
          {message}
        </small>
      ) : null}
    </fieldset>
  );
}

/**
 * A form's text boxes by field name: `bind(name)` is what a Field takes (its name, value and
 * onInput), `values` what the boxes hold now, `set` writes one (a form that empties a box).
 */
export function useValues<K extends string>(initial: Record<K, string>) {
  const [values, setValues] = useState(initial);
  const set = (name: K, value: string) => setValues((old) => ({ ...old, [name]: value }));
  return { values, set, bind: (name: K) => ({ name, value: values[name], onInput: (v: string) => set(name, v) }) };
}

/** "" → undefined, else the number (the API's integer fields). */
export const num = (v: string): number | undefined => (v.trim() === "" ? undefined : Number(v));
