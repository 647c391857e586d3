import { useState } from "preact/hooks";
import { ThemeToggle } from "../theme.js";

export function SignIn({ onSignIn }: { onSignIn: (key: string) => Promise<void> }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            await onSignIn(key.trim());
          } catch (err) {
            setError((err as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1>route lists</h1>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          required
          placeholder="rlk_…"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <p class="muted">Kept in this tab's session storage only, sent as a Bearer header.</p>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <div class="row">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
          <ThemeToggle />
        </div>
      </form>
    </main>
  );
}
