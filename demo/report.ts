/** Pure: the closing lines `npm start` ends with — the settlement table (rows from sdk/words/narrative.ts), the checks. */
import path from "node:path";
import { formatUsdc, usdcAmount } from "../sdk/words/format.ts";
import { STAKE_LABELS } from "../sdk/rules/stake.ts";
import type { PromiseCheck, ProviderRow, WatchResult } from "./types.ts";

export type { PromiseCheck, ProviderRow } from "./types.ts";

export function formatTable(rows: ProviderRow[]): string[] {
  const header = [
    "provider",
    "steps accepted",
    "refused",
    "earned USDC",
    "withdrawn USDC",
    `stake USDC ${STAKE_LABELS.paidIn}/${STAKE_LABELS.slashed}/${STAKE_LABELS.held}`,
    "why",
  ];
  const body = rows.map((r) => [
    r.name,
    String(r.stepsAccepted),
    String(r.checkpointsRefused),
    usdcAmount(r.earned),
    usdcAmount(r.withdrawn),
    stakeCell(r),
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

/**
 * A provider's stake over the run: what it paid in, what was slashed, what the registry holds for it now (and
 * the part of that a job still locks, when any).
 */
export function stakeCell(r: Pick<ProviderRow, "stake">): string {
  const cell = [r.stake.paidIn, r.stake.slashed, r.stake.deposited].map(usdcAmount).join(" / ");
  const notes = [
    ...(r.stake.forfeited > 0n ? [`${usdcAmount(r.stake.forfeited)} forfeited`] : []),
    ...(r.stake.locked > 0n ? [`${usdcAmount(r.stake.locked)} locked`] : []),
  ];
  return notes.length ? `${cell} (${notes.join(", ")})` : cell;
}

export interface Summary {
  /** The verdict's metric in words (workloads/metric.ts). */
  metric: string;
  passed: boolean;
  rows: ProviderRow[];
  refund: bigint;
  /** The client's share of slashed stakes on this job (ProviderSlashed's toClient). */
  compensation: bigint;
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
    clientLine(s),
    failoverLine(s.watch),
    ...(s.extra ?? []),
    "",
    ...s.checks.map((c) => `${c.held ? "✔" : "✘"} ${c.promise}: ${c.detail}`),
    "",
    s.ok ? "every promise held" : "a promise was BROKEN",
    `recording: ${s.recording}`,
  ];
}

/** What the client got back: the unspent budget, its compensation (slashes, forfeits), the bond of a dispute. */
export function clientLine(s: Pick<Summary, "refund" | "compensation" | "dispute" | "bondBack">): string {
  const compensation =
    s.compensation > 0n ? `; compensation (slashed and forfeited stake): ${formatUsdc(s.compensation)}` : "";
  const bond = s.dispute ? `; dispute bond returned: ${formatUsdc(s.bondBack)}` : "";
  return `client refund: ${formatUsdc(s.refund)}${compensation}${bond}`;
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

/**
 * --keep: how to look around the network left up, every command ready to paste (the keys named by their files).
 * The job hint uses the template the run approved (`template`: another is not approved on a fresh local chain), and
 * the dispute and arbiter hints name the job it creates (the next id), for when its verdict is in.
 */
export function keptHowTo(k: {
  jobId: bigint;
  rpc: string;
  deploymentFile: string;
  clientKeyFile: string;
  /** Absent on an existing deployment: the run has no arbiter key there. */
  arbiterKeyFile?: string;
  /** The run's template: approved on its escrow. */
  template: string;
}): string[] {
  const common = `--rpc ${k.rpc} --deployment ${k.deploymentFile}`;
  const keys = path.dirname(k.clientKeyFile);
  const next = k.jobId + 1n;
  const arbiter = k.arbiterKeyFile
    ? [
        `  npx gpuchain dispute ${next} --key ${k.clientKeyFile} ${common}   (once job ${next} has its verdict, within its dispute window)`,
        `  npx gpuchain arbiter resolve ${next} --reject --key ${k.arbiterKeyFile} ${common}   (once job ${next} is disputed; or --uphold)`,
      ]
    : [];
  return [
    "",
    "the network stays up (chain, keepers, verifiers, providers) until Ctrl-C. Try, in another terminal:",
    `  npx gpuchain explain ${k.jobId} ${common}`,
    `  npx gpuchain wallet alice ${common}   (or client, bob, mallory, verifier1…3, any address; --json for machines)`,
    `  npx gpuchain reserves --watch ${common}`,
    `  npx gpuchain job create --template ${k.template} --steps 40 --max-price 0.0015 --key ${k.clientKeyFile} ${common}`,
    ...arbiter,
    `  keys of this run: ${keys} (${k.arbiterKeyFile ? "the arbiter's too: arbiter.key" : "the roles' key files"})`,
    "  (from this folder, with neither --rpc nor --deployment, every gpuchain command finds this network by itself)",
  ];
}
