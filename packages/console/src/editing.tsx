import { useState } from "preact/hooks";
import { ConfirmButton } from "./confirm.js";
import type { Column } from "./table.js";
import type { Loaded } from "./ui.js";

/**
 * A list whose rows are edited in place, one at a time, in the form that also creates them:
 * `current` is the row being edited (none: the form creates), `toggle` is a row's Edit button,
 * `save` sends the form's body (PATCH of `current`, else POST) and reloads the list;
 * `actions` is the column of each row's Edit and Delete (the question names the row).
 */
export function useListEditing<T extends { id: string }, B>(o: {
  /** The list as `useItems` loads it: its rows, and reload after a change. */
  list: Loaded<T[]>;
  create: (body: B) => Promise<unknown>;
  update: (id: string, body: B) => Promise<unknown>;
  remove: (id: string) => Promise<unknown>;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  const current = o.list.data?.find((r) => r.id === editing);
  const stop = () => setEditing(null);
  return {
    current,
    /** The form's Cancel: only an edit has one. */
    cancel: current ? stop : undefined,
    save: async (body: B) => {
      if (current) {
        await o.update(current.id, body);
        stop();
      } else await o.create(body);
      o.list.reload();
    },
    actions: (question: (row: T) => string): Column<T> => ({
      header: "Actions",
      cell: (row) => (
        <EditDelete
          onEdit={() => setEditing(editing === row.id ? null : row.id)}
          question={question(row)}
          onDelete={async () => {
            await o.remove(row.id);
            o.list.reload();
          }}
        />
      ),
    }),
  };
}

/** A row's Edit button and its Delete, asked once. */
function EditDelete(props: { onEdit: () => void; question: string; onDelete: () => Promise<unknown> }) {
  return (
    <span class="row">
      <button type="button" onClick={props.onEdit}>
        Edit
      </button>
      <ConfirmButton label="Delete" question={props.question} action={props.onDelete} />
    </span>
  );
}
