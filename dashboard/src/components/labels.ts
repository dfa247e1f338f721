/**
 * Where a chart's labels go so that none overprints another: each rule's label sits beside its line (flipped to the
 * left near the right edge) in the first row from the top where it overlaps no label placed before it; a label with
 * no free row is left off the canvas (the list under the chart carries every label). Pure.
 */
export interface Box {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

export interface Placed {
  x: number;
  /** Baseline of the text. */
  y: number;
  box: Box;
}

const overlaps = (a: Box, b: Box) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

/**
 * Places labels of `widths` beside vertical lines at `xs` inside `area`, one text row of `rowHeight` each, avoiding
 * `taken` (e.g. the target line's label). null: no room for that label.
 */
export function placeRuleLabels(
  xs: number[],
  widths: number[],
  area: Box,
  rowHeight: number,
  gap: number,
  taken: Box[] = [],
): (Placed | null)[] {
  const placed = [...taken];
  const rows = Math.max(0, Math.floor((area.y1 - area.y0) / rowHeight));
  return xs.map((x, i) => {
    const w = widths[i];
    if (x < area.x0 || x > area.x1) return null;
    const left = x + gap + w <= area.x1 ? x + gap : x - gap - w;
    if (left < area.x0) return null;
    for (let r = 0; r < rows; r++) {
      const box = { x0: left - 2, x1: left + w + 2, y0: area.y0 + r * rowHeight, y1: area.y0 + (r + 1) * rowHeight };
      if (placed.some((b) => overlaps(b, box))) continue;
      placed.push(box);
      return { x: left, y: box.y1 - 3, box };
    }
    return null;
  });
}
