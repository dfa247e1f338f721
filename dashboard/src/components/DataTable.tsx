import type { ReactNode } from "react";

/** A table in a scrollable region a keyboard can focus: one header row of `columns`, then the rows given. */
export function DataTable({ label, columns, children }: { label: string; columns: string[]; children: ReactNode }) {
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={label}>
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
