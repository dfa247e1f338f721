/**
 * A uPlot chart that sizes itself to its container. `rules` draws labelled vertical lines (failovers, fencing,
 * refusals) on the curve; `hline` a horizontal target. Labels never overprint one another (labels.ts); a text
 * summary under it carries the same facts for screen readers and tests.
 */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { placeRuleLabels, type Box } from "./labels.ts";

export interface Rule {
  x: number;
  label: string;
  color: string;
}

interface Props {
  label: string;
  data: uPlot.AlignedData;
  series: uPlot.Series[];
  axes?: { x?: string; y?: string; y2?: string };
  rules?: Rule[];
  hline?: { y: number; label: string; scale?: string };
  height?: number;
  scales?: uPlot.Scales;
  bars?: boolean;
}

export function Chart(p: Props) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const extras = useRef({ rules: p.rules, hline: p.hline });
  extras.current = { rules: p.rules, hline: p.hline };

  useEffect(() => {
    if (!box.current) return;
    const width = Math.max(240, box.current.clientWidth);
    const opts: uPlot.Options = {
      width,
      height: p.height ?? 220,
      series: [{ label: p.axes?.x ?? "x" }, ...p.series],
      scales: p.scales ?? { x: { time: false } },
      legend: { show: true },
      cursor: { sync: { key: "gpuchain" } },
      axes: [
        { label: p.axes?.x, stroke: "#9aa4b2", grid: { stroke: "#1f2937" }, ticks: { stroke: "#1f2937" } },
        { label: p.axes?.y, stroke: "#9aa4b2", grid: { stroke: "#1f2937" }, ticks: { stroke: "#1f2937" } },
        ...(p.axes?.y2
          ? [{ side: 1, scale: "y2", label: p.axes.y2, stroke: "#9aa4b2", grid: { show: false } } as uPlot.Axis]
          : []),
      ],
      hooks: { draw: [(u) => drawExtras(u, extras.current.rules, extras.current.hline)] },
    };
    plot.current = new uPlot(opts, p.data, box.current);
    const ro = new ResizeObserver(() => {
      if (box.current && plot.current)
        plot.current.setSize({ width: Math.max(240, box.current.clientWidth), height: p.height ?? 220 });
    });
    ro.observe(box.current);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [p.series.length, p.axes?.y2]);

  useEffect(() => {
    plot.current?.setData(p.data);
  }, [p.data]);

  // New rules or a target (the template's, once the config arrived) with the same data: draw them too.
  const extrasKey = JSON.stringify([p.rules, p.hline]);
  useEffect(() => {
    plot.current?.redraw(false);
  }, [extrasKey]);

  return <div className="chart" ref={box} role="img" aria-label={p.label} />;
}

function drawExtras(u: uPlot, rules: Rule[] | undefined, hline: Props["hline"]) {
  const ctx = u.ctx;
  const dpr = devicePixelRatio;
  const { left, top, width, height } = u.bbox;
  const area = { x0: left, x1: left + width, y0: top, y1: top + height };
  ctx.save();
  ctx.font = `${11 * dpr}px DejaVu Sans, sans-serif`;
  // uPlot leaves its axes' alignment on the context: the placement below measures from the text's left end
  ctx.textAlign = "left";
  ctx.textBaseline = "alphabetic";
  // The target line first: its label claims its place, the rules' labels go around it.
  const taken: Box[] = [];
  if (hline) {
    const y = u.valToPos(hline.y, hline.scale ?? "y", true);
    if (y >= top && y <= top + height) {
      ctx.strokeStyle = "#f59e0b";
      ctx.setLineDash([2 * dpr, 4 * dpr]);
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
      ctx.fillStyle = "#f59e0b";
      const w = ctx.measureText(hline.label).width;
      const x = left + width - w - 6 * dpr;
      const below = y - 14 * dpr < top; // near the top edge: under the line
      const base = below ? y + 13 * dpr : y - 4 * dpr;
      ctx.fillText(hline.label, x, base);
      taken.push({ x0: x - 2, x1: x + w + 2, y0: base - 12 * dpr, y1: base + 3 * dpr });
    }
  }
  const shown = rules ?? [];
  const xs = shown.map((r) => u.valToPos(r.x, "x", true));
  const places = placeRuleLabels(
    xs,
    shown.map((r) => ctx.measureText(r.label).width),
    area,
    14 * dpr,
    4 * dpr,
    taken,
  );
  shown.forEach((r, i) => {
    const x = xs[i];
    if (x < left || x > left + width) return;
    ctx.strokeStyle = r.color;
    ctx.setLineDash([4 * dpr, 3 * dpr]);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    const at = places[i];
    if (!at) return; // no free row: the list under the chart names it
    ctx.fillStyle = r.color;
    ctx.fillText(r.label, at.x, at.y);
  });
  ctx.restore();
}
