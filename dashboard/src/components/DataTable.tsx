import { useLayoutEffect, useRef, type ReactNode } from "react";

/**
 * A table in a scrollable region a keyboard can focus: one header row of `columns`, then the rows given. Each cell
 * carries its column's name (`data-label`), so at phone width every row shows as one card of "name: value" lines
 * (styles.css) without a sideways scroll; the rows may come from any component, so the names are set after render.
 */
export function DataTable({ label, columns, children }: { label: string; columns: string[]; children: ReactNode }) {
  const body = useRef<HTMLTableSectionElement>(null);
  useLayoutEffect(() => {
    for (const row of body.current?.rows ?? []) {
      [...row.cells].forEach((cell, i) => {
        if (columns[i] !== undefined && cell.dataset.label !== columns[i]) cell.dataset.label = columns[i];
      });
    }
  });
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={label}>
      <table className="cards-on-phone">
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody ref={body}>{children}</tbody>
      </table>
    </div>
  );
}
