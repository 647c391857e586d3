import { ok } from "../api.js";
import { navigate } from "../router.js";
import { useSession } from "../session.js";
import { ActionButton, Ago, ErrorBox, Page, useLoad } from "../ui.js";
import { CdnSources } from "./cdn-sources.js";
import { Entries } from "./entries.js";
import { RpkiCheck, RpkiPolicySelect } from "./rpki.js";

export function ModulePage({ id }: { id: string }) {
  const { api, can } = useSession();
  const mod = useLoad(() => ok(api.GET("/v1/modules/{module_id}", { params: { path: { module_id: id } } })), [id]);
  const m = mod.data;
  return (
    <Page
      title={m ? `Module ${m.name}` : "Module"}
      actions={
        m && can("operator") ? (
          <>
            <ActionButton
              label={m.enabled ? "Disable" : "Enable"}
              action={async () => {
                await ok(api.PATCH("/v1/modules/{module_id}", { params: { path: { module_id: id } }, body: { enabled: !m.enabled } }));
                mod.reload();
              }}
            />
            <ActionButton
              label="Delete module"
              kind="danger"
              action={async () => {
                if (!window.confirm(`Delete module ${m.name} with its entries?`)) return;
                await ok(api.DELETE("/v1/modules/{module_id}", { params: { path: { module_id: id } } }));
                navigate("/modules");
              }}
            />
          </>
        ) : null
      }
    >
      <ErrorBox error={mod.error} />
      {m ? (
        <>
          <dl class="facts">
            <dt>Type</dt>
            <dd>{m.type}</dd>
            <dt>Action</dt>
            <dd>{m.action === "exclude" ? "exclude: never steered" : "announce"}</dd>
            <dt>Stale records</dt>
            <dd>
              {m.max_stale_hours === "tenant"
                ? "the tenant's setting"
                : m.max_stale_hours === null
                  ? "kept forever"
                  : `dropped ${m.max_stale_hours} h after the source's last success`}
            </dd>
            <dt>Prefixes</dt>
            <dd>
              {m.snapshot.prefix_count_v4} IPv4, {m.snapshot.prefix_count_v6} IPv6
            </dd>
            <dt>Last refresh</dt>
            <dd>
              <Ago at={m.last_refreshed_at} />
            </dd>
            {m.type === "AS_PREFIXES" ? (
              <>
                <dt>RPKI policy</dt>
                <dd>
                  <RpkiPolicySelect moduleId={m.id} policy={m.rpki_policy} onSaved={mod.reload} />
                </dd>
              </>
            ) : null}
            {m.last_refresh_error ? (
              <>
                <dt>Refresh error</dt>
                <dd class="error">{m.last_refresh_error}</dd>
              </>
            ) : null}
          </dl>
          <Entries moduleId={m.id} type={m.type} />
          {m.type === "AS_PREFIXES" ? <RpkiCheck moduleId={m.id} /> : null}
          <CdnSources moduleId={m.id} />
        </>
      ) : null}
    </Page>
  );
}
