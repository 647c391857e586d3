import { useState } from "preact/hooks";
import { ok } from "../api.js";
import { useSession } from "../session.js";
import { ActionButton, ErrorBox, Page, useLoad } from "../ui.js";

/** The tenant's settings; operators edit them as a JSON merge patch, viewers only read. */
export function SettingsPage() {
  const { api, can } = useSession();
  const settings = useLoad(() => ok(api.GET("/v1/settings", {})), []);
  const [patch, setPatch] = useState("");
  const [saved, setSaved] = useState(false);
  return (
    <Page title="Settings">
      <ErrorBox error={settings.error} />
      <pre class="card" data-testid="settings">
        {settings.data ? JSON.stringify(settings.data.settings, null, 2) : "…"}
      </pre>
      {can("operator") ? (
        <div class="card">
          <label>
            Merge patch (JSON; null deletes a key)
            <textarea
              name="settings-patch"
              rows={4}
              placeholder='{"revision_guard_max_drop_percent": 30}'
              value={patch}
              onInput={(e) => setPatch(e.currentTarget.value)}
            />
          </label>
          <ActionButton
            label="Save settings"
            kind="primary"
            action={async () => {
              setSaved(false);
              await ok(api.PATCH("/v1/settings", { body: JSON.parse(patch) }));
              setPatch("");
              setSaved(true);
              settings.reload();
            }}
          />
          {saved ? <p>Saved.</p> : null}
        </div>
      ) : (
        <p class="muted">Read-only: changing settings needs an operator key.</p>
      )}
    </Page>
  );
}
