/**
 * Sybil cost (issue 13 item 4), from two real runs of demo/sybil.ts on this machine — a Hardhat node, the keepers,
 * three verifiers and one honest provider agent, a 40-step job of the small template — once alone and once with
 * 20 idle identities at price 1 (plain ethers: staked, heartbeating off and on chain, never training):
 * - sybil_extra_seconds: the job's time (created → verdict) with the idle identities minus without;
 * - sybil_extra_seconds_per_identity: that ÷ 20; sybil_max_idle_hold_seconds: the longest idle hold (chain time);
 * - sybil_idle_assignments / sybil_idle_earned: holds by idle identities (at most one each) and their pay (0).
 * The coordinator runs with --start-grace-ms 4000 --progress-floor-ms 3000 (docs/BENCHMARKS.md: how the figure
 * scales with the defaults). Run alone: `node bench/sybil.ts`.
 */
import { runSybil } from "../demo/sybil.ts";

const IDLE = 20;
const FLAGS = ["--start-grace-ms", "4000", "--progress-floor-ms", "3000"];

export async function benchSybil(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  const run = (idle: number) =>
    runSybil({
      idle,
      totalSteps: 40,
      checkpointInterval: 10,
      runDir: `.gpuchain/bench-sybil-${idle}`,
      deploymentId: `bench-sybil-${idle}-${process.pid}`,
      coordinatorFlags: FLAGS,
      timeoutMs: 900_000,
    });
  log("sybil: the honest provider alone …");
  const alone = await run(0);
  log(`sybil: with ${IDLE} idle identities …`);
  const crowded = await run(IDLE);
  if (!alone.settled || !crowded.settled) throw new Error("a Sybil benchmark run did not settle");
  const idle = new Set(crowded.idle);
  const extra = crowded.jobSeconds - alone.jobSeconds;
  const holds = crowded.unassignments.filter((u) => idle.has(u.provider)).map((u) => u.heldSeconds);
  return {
    sybil_job_seconds_alone: round(alone.jobSeconds),
    sybil_job_seconds_with_idle: round(crowded.jobSeconds),
    sybil_extra_seconds: round(extra),
    sybil_extra_seconds_per_identity: round(extra / IDLE),
    sybil_max_idle_hold_seconds: Math.max(0, ...holds),
    sybil_idle_assignments: crowded.assignments.filter((a) => idle.has(a)).length,
    sybil_idle_earned: Number(crowded.idle.reduce((s, a) => s + (crowded.earned.get(a.toLowerCase()) ?? 0n), 0n)),
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchSybil((l) => process.stderr.write(`[bench] ${l}\n`))))
    console.log(`${k}: ${v}`);
  process.exit(0);
}
