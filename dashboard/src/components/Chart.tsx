/**
 * A uPlot chart that sizes itself to its container. `rules` draws labelled vertical lines (failovers, fencing,
 * refusals) on the curve; `hline` a horizontal target. A text summary under it carries the same facts for
 * screen readers and tests.
 */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

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

  return <div className="chart" ref={box} role="img" aria-label={p.label} />;
}

function drawExtras(u: uPlot, rules: Rule[] | undefined, hline: Props["hline"]) {
  const ctx = u.ctx;
  const { left, top, width, height } = u.bbox;
  ctx.save();
  ctx.font = `${11 * devicePixelRatio}px DejaVu Sans, sans-serif`;
  (rules ?? []).forEach((r, i) => {
    const x = u.valToPos(r.x, "x", true);
    if (x < left || x > left + width) return;
    ctx.strokeStyle = r.color;
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    ctx.fillStyle = r.color;
    ctx.fillText(r.label, x + 4 * devicePixelRatio, top + 14 * (i + 1) * devicePixelRatio);
  });
  if (hline) {
    const y = u.valToPos(hline.y, hline.scale ?? "y", true);
    if (y >= top && y <= top + height) {
      ctx.strokeStyle = "#f59e0b";
      ctx.setLineDash([2 * devicePixelRatio, 4 * devicePixelRatio]);
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
      ctx.fillStyle = "#f59e0b";
      ctx.fillText(hline.label, left + 6 * devicePixelRatio, y - 4 * devicePixelRatio);
    }
  }
  ctx.restore();
}
