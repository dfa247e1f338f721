/** Pure: the settlement table `npm start` ends with (rows come from sdk/narrative.ts over the event ledger). */
export interface ProviderRow {
  name: string;
  stepsAccepted: number;
  checkpointsRefused: number;
  earned: bigint;
  withdrawn: bigint;
  why: string;
}

import { formatUsdc, usdcAmount } from "../sdk/format.ts";

export function formatTable(rows: ProviderRow[]): string[] {
  const header = ["provider", "steps accepted", "refused", "earned USDC", "withdrawn USDC", "why"];
  const body = rows.map((r) => [r.name, String(r.stepsAccepted), String(r.checkpointsRefused), usdcAmount(r.earned), usdcAmount(r.withdrawn), r.why]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)];
}

export interface PromiseCheck {
  promise: string;
  held: boolean;
  detail: string;
}
