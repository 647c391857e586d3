import { useState } from "preact/hooks";
import { ok, type Schema } from "../api.js";
import { useSession } from "../session.js";
import { Table } from "../table.js";
import { ActionButton } from "../ui.js";

// RPKI origin validation on a module's page: its `rpki_policy`, and the dry run that answers
// what validation of the current snapshot finds and what `drop_invalid` would leave out.

export const RPKI_POLICIES = [
  ["off", "off"],
  ["report", "report invalid prefixes"],
  ["drop_invalid", "drop invalid prefixes"],
] as const;
export type RpkiPolicy = Schema<"Module">["rpki_policy"];

type DryRun = Schema<"RpkiDryRun">;

/** The policy as a select that saves on change (read-only below operator). */
export function RpkiPolicySelect(props: { moduleId: string; policy: RpkiPolicy; onSaved: () => void }) {
  const { api, can } = useSession();
  return (
    <select
      aria-label="RPKI policy"
      name="rpki-policy"
      disabled={!can("operator")}
      value={props.policy}
      onChange={async (e) => {
        const rpki_policy = e.currentTarget.value as RpkiPolicy;
        await ok(api.PATCH("/v1/modules/{module_id}", { params: { path: { module_id: props.moduleId } }, body: { rpki_policy } }));
        props.onSaved();
      }}
    >
      {RPKI_POLICIES.map(([value, text]) => (
        <option key={value} value={value}>
          {text}
        </option>
      ))}
    </select>
  );
}

/** "Check RPKI": the dry run of the module's current snapshot (operators; it makes no job and no revision). */
export function RpkiCheck({ moduleId }: { moduleId: string }) {
  const { api, can } = useSession();
  const [report, setReport] = useState<DryRun | null>(null);
  if (!can("operator")) return null;
  const m = report?.modules[0];
  return (
    <section aria-label="RPKI check">
      <h2>RPKI origin validation</h2>
      <p class="muted">Validates the prefixes collected at the last refresh against the VRPs; changes nothing.</p>
      <ActionButton
        label="Check RPKI (dry run)"
        testId="rpki-check"
        action={async () => {
          const answer = await ok(api.POST("/v1/modules/{module_id}/refresh", { params: { path: { module_id: moduleId } }, body: { dry_run: true } }));
          if (!("dry_run" in answer)) throw new Error("the controller started a refresh instead of a dry run");
          setReport(answer);
        }}
      />
      {report ? (
        <div data-testid="rpki-report">
          {report.rpki.available ? null : (
            <p class="error" role="alert">
              Validation unavailable: {report.rpki.reason}. Nothing would be validated or dropped.
            </p>
          )}
          {m ? (
            <>
              <p>
                <span data-testid="rpki-counts">
                  {m.valid} valid, {m.invalid} invalid, {m.not_found} not found
                </span>
                ; <code>drop_invalid</code> would drop <strong data-testid="rpki-would-drop">{m.would_drop}</strong>.
              </p>
              {m.invalid_prefixes.length ? (
                <Table testId="rpki-invalid" columns={[{ header: "Invalid prefix" }, { header: "Origin" }, { header: "Via" }]}>
                  {m.invalid_prefixes.map((p) => (
                    <tr key={`${p.prefix}-${p.origin}`}>
                      <td>{p.prefix}</td>
                      <td>AS{p.origin}</td>
                      <td>{p.via ?? ""}</td>
                    </tr>
                  ))}
                </Table>
              ) : null}
            </>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
