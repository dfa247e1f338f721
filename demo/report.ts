/**
 * Pure: turns the escrow's events into the settlement table `npm start` ends with, and checks the three promises.
 * No I/O here, so the same code explains a live run, a recording and a test.
 */
export interface EscrowEvent {
  name: string;
  args: Record<string, unknown>;
  blockNumber: number;
}

export interface ProviderRow {
  name: string;
  address: string;
  stepsAccepted: number;
  checkpointsRefused: number;
  earned: bigint;
  withdrawn: bigint;
  why: string;
}

const lower = (v: unknown) => String(v).toLowerCase();

/** Per provider: accepted steps, refusals, earnings and why, from events alone. */
export function settlementRows(jobId: bigint, events: EscrowEvent[], names: Record<string, string>): ProviderRow[] {
  const rows = new Map<string, ProviderRow>();
  const row = (address: string) => {
    const key = lower(address);
    if (!rows.has(key)) {
      rows.set(key, { name: names[key] ?? address, address, stepsAccepted: 0, checkpointsRefused: 0, earned: 0n, withdrawn: 0n, why: "" });
    }
    return rows.get(key)!;
  };
  for (const name of Object.keys(names)) row(name);
  let unassignedByFailover = new Set<string>();
  for (const e of events) {
    if (e.args.jobId !== undefined && BigInt(e.args.jobId as bigint) !== jobId) continue;
    if (e.name === "CheckpointAccepted") {
      const r = row(String(e.args.provider));
      r.stepsAccepted += Number(e.args.stepsCredited);
      r.earned += BigInt(e.args.amount as bigint);
    } else if (e.name === "CheckpointRefused") {
      row(String(e.args.provider)).checkpointsRefused += 1;
    } else if (e.name === "ProviderUnassigned" && Number(e.args.reason) !== 2) {
      unassignedByFailover.add(lower(e.args.provider));
    } else if (e.name === "Withdrawn") {
      const key = lower(e.args.account);
      if (rows.has(key)) rows.get(key)!.withdrawn += BigInt(e.args.amount as bigint);
    }
  }
  for (const r of rows.values()) r.why = explainRow(r, unassignedByFailover.has(lower(r.address)));
  return [...rows.values()];
}

function explainRow(r: ProviderRow, failedOver: boolean): string {
  if (r.checkpointsRefused > 0 && r.stepsAccepted === 0) return "refused by the Quality Guard; fenced off the job";
  if (r.checkpointsRefused > 0) return `paid for accepted steps; then refused by the Quality Guard`;
  if (failedOver && r.stepsAccepted > 0) return "stopped heartbeating; paid exactly for its accepted checkpoints";
  if (failedOver) return "stopped heartbeating before any accepted checkpoint";
  if (r.stepsAccepted > 0) return "trained accepted steps to the final model";
  return "no accepted checkpoint";
}

export function formatUsdc(units: bigint): string {
  const whole = units / 1_000_000n;
  const frac = (units % 1_000_000n).toString().padStart(6, "0");
  return `${whole}.${frac}`;
}

export function formatTable(rows: ProviderRow[]): string[] {
  const header = ["provider", "steps accepted", "refused", "earned USDC", "withdrawn USDC", "why"];
  const body = rows.map((r) => [r.name, String(r.stepsAccepted), String(r.checkpointsRefused), formatUsdc(r.earned), formatUsdc(r.withdrawn), r.why]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)];
}

export interface PromiseCheck {
  promise: string;
  held: boolean;
  detail: string;
}
