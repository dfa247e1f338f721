// The training-loss chart's lines: which heartbeats of which provider form one unbroken stretch.

export type LossPoint = { ms: number; step: number; loss: number; provider: string };
export type LossRun = { provider: string; points: LossPoint[] };

/**
 * One run per stretch a provider trained, in time order, each provider in its own colour. A provider's line breaks
 * where it did not simply go on: its step went back (it resumed from an earlier checkpoint), or another provider
 * trained steps between its last point and this one (a takeover, then a hand-back). Heartbeats of another provider
 * that merely overlap in time — a replacement starting from an earlier checkpoint while a refused provider trains on
 * until it is fenced — break neither line: neither provider stopped.
 */
export function lossRuns(loss: readonly LossPoint[]): LossRun[] {
  const runs: LossRun[] = [];
  // each provider's latest run, and the steps other providers reported since its last point
  const open = new Map<string, { run: LossRun; othersSince: number[] }>();
  for (const l of [...loss].sort((x, y) => x.ms - y.ms)) {
    const mine = open.get(l.provider);
    const last = mine?.run.points[mine.run.points.length - 1].step;
    const goesOn = last !== undefined && l.step > last && !mine!.othersSince.some((s) => s > last && s <= l.step);
    if (goesOn) mine!.run.points.push(l);
    else {
      const run = { provider: l.provider, points: [l] };
      runs.push(run);
      open.set(l.provider, { run, othersSince: [] });
    }
    open.get(l.provider)!.othersSince = [];
    for (const [p, o] of open) if (p !== l.provider) o.othersSince.push(l.step);
  }
  return runs;
}
