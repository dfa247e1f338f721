/** Pure: the closing lines `npm start` ends with — the settlement table (rows from sdk/narrative.ts), the checks. */
import { formatUsdc, usdcAmount } from "../sdk/format.ts";
import type { PromiseCheck, ProviderRow, WatchResult } from "./types.ts";

export type { PromiseCheck, ProviderRow } from "./types.ts";

export function formatTable(rows: ProviderRow[]): string[] {
  const header = [
    "provider",
    "steps accepted",
    "refused",
    "earned USDC",
    "withdrawn USDC",
    "stake USDC deposited/locked/slashed",
    "why",
  ];
  const body = rows.map((r) => [
    r.name,
    String(r.stepsAccepted),
    String(r.checkpointsRefused),
    usdcAmount(r.earned),
    usdcAmount(r.withdrawn),
    [r.stake.deposited, r.stake.locked, r.stake.slashed].map(usdcAmount).join(" / "),
    r.why,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)];
}

export interface Summary {
  /** The verdict's metric in words (workloads/metric.ts). */
  metric: string;
  passed: boolean;
  rows: ProviderRow[];
  refund: bigint;
  bondBack: bigint;
  dispute: boolean;
  watch: WatchResult;
  checks: PromiseCheck[];
  ok: boolean;
  recording: string;
  /** Lines before the checks (--network rehearsal: what was injected, what each part did). */
  extra?: string[];
}

export function summaryLines(s: Summary): string[] {
  const verdict = s.passed ? "passed" : "failed";
  return [
    "",
    `final model: ${s.metric}, ${verdict} the template's rules`,
    "",
    ...formatTable(s.rows),
    "",
    `client refund: ${formatUsdc(s.refund)}${s.dispute ? `; dispute bond returned: ${formatUsdc(s.bondBack)}` : ""}`,
    failoverLine(s.watch),
    ...(s.extra ?? []),
    "",
    ...s.checks.map((c) => `${c.held ? "✔" : "✘"} ${c.promise}: ${c.detail}`),
    "",
    s.ok ? "every promise held" : "a promise was BROKEN",
    `recording: ${s.recording}`,
  ];
}

/** The failover time and the work it cost, from the chain and the killed agent's own progress record. */
export function failoverLine(w: WatchResult): string {
  const time = w.failoverSeconds === undefined ? "n/a" : `${w.failoverSeconds.toFixed(1)} s`;
  const head = `failover: ${time} from SIGKILL to the replacement's first accepted checkpoint`;
  const l = w.lostWork;
  if (!l) return `${head}; work lost: n/a`;
  const reported = l.reportedStep > 0 ? `, reported step ${l.reportedStep} on chain` : "";
  return (
    `${head}; work lost: ${l.steps} steps (alice trained to step ${l.trainedStep}${reported}; ` +
    `the replacement resumed from step ${l.resumeStep}, the last accepted checkpoint)`
  );
}
