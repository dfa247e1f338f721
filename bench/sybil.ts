/**
 * Sybil cost (no starving; the Sybil bound), from real runs of demo/sybil.ts on this machine — a Hardhat node,
 * the keepers, three verifiers and one honest provider agent, a 40-step job of the small template — with 0, 5 and
 * 20 idle identities at price 1 (plain ethers: staked, heartbeating off and on chain, never training). The honest
 * provider has a track record (one checkpoint delivered before the identities register), as on a network that has
 * run before; one more run of 20 meets a fresh honest provider (nobody proven: the bound does not apply).
 * - sybil_extra_seconds_{5,20}: the job's time (created → verdict) with the idle identities minus without;
 * - sybil_idle_assignments_{5,20}: holds by idle identities (the Sybil bound: 1 while a proven provider fits);
 * - sybil_attacker_cost_usdc_{5,20}: what the identities lost: each is on probation (no accepted checkpoint), so
 *   each hold forfeits its stake lock (HoldForfeited) — and sybil_client_compensation_usdc_{…}: the same locks,
 *   paid to the delayed client;
 * - sybil_extra_seconds_20_fresh / sybil_idle_assignments_20_fresh: the same against a provider with no record;
 * - sybil_junk_*_20: 20 junk-reporting identities (beating a rising step, reporting a random hash with no blobs)
 *   against the proven provider: one junk hold at most (a refused or lapsed hold is a strike like an idle one).
 * The coordinator runs with --start-grace-ms 4000 --progress-floor-ms 3000 (docs/BENCHMARKS.md: how the figure
 * scales with the defaults). Run alone: `node bench/sybil.ts`.
 */
import { runSybil, type SybilResult } from "../demo/sybil.ts";

const FLAGS = ["--start-grace-ms", "4000", "--progress-floor-ms", "3000"];
/**
 * The escrow's lease (local.json: 120 s). A newcomer's stalled hold lasts its job's progress timeout (blobs-tiny at
 * interval 10: one lease), when the contract forfeits its lock; 30 s keeps 20 fresh identities' holds to minutes.
 */
const LEASE_SECONDS = 30;

export async function benchSybil(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  const run = (idle: number, provenHonest: boolean, junk = false) =>
    runSybil({
      idle,
      totalSteps: 40,
      checkpointInterval: 10,
      runDir: `.gpuchain/bench-sybil-${idle}`,
      deploymentId: `bench-sybil-${idle}-${provenHonest ? "proven" : "fresh"}${junk ? "-junk" : ""}-${process.pid}`,
      coordinatorFlags: FLAGS,
      leaseSeconds: LEASE_SECONDS,
      timeoutMs: 1_800_000,
      provenHonest,
      junk,
    });
  log("sybil: the honest provider (with a track record) alone …");
  const alone = await run(0, true);
  const out: Record<string, number> = { sybil_job_seconds_alone: round(alone.jobSeconds) };
  for (const idle of [5, 20]) {
    log(`sybil: with ${idle} idle identities …`);
    Object.assign(out, figures(`_${idle}`, alone, await run(idle, true)));
  }
  log("sybil: 20 idle identities against a fresh honest provider (no track record) …");
  const freshAlone = await run(0, false);
  Object.assign(out, figures("_20_fresh", freshAlone, await run(20, false)));
  log("sybil: 20 junk-reporting identities against the provider with a track record …");
  Object.assign(out, figures("_20", alone, await run(20, true, true), "sybil_junk"));
  return out;
}

function figures(suffix: string, alone: SybilResult, crowded: SybilResult, prefix = "sybil"): Record<string, number> {
  if (!alone.settled || !crowded.settled) throw new Error("a Sybil benchmark run did not settle");
  const idle = new Set(crowded.idle);
  const holds = crowded.unassignments.filter((u) => idle.has(u.provider)).map((u) => u.heldSeconds);
  const sum = (m: Map<string, bigint>) => crowded.idle.reduce((s, a) => s + (m.get(a.toLowerCase()) ?? 0n), 0n);
  // Each identity is on probation: every hold it ends without an accepted checkpoint forfeits its lock to the
  // client (HoldForfeited), so what the attacker loses is exactly what the delayed client receives.
  const forfeited = Number(sum(crowded.forfeited)) / 1e6;
  return {
    [`${prefix}_extra_seconds${suffix}`]: round(crowded.jobSeconds - alone.jobSeconds),
    [`${prefix}_idle_assignments${suffix}`]: crowded.assignments.filter((a) => idle.has(a)).length,
    [`${prefix}_max_idle_hold_seconds${suffix}`]: Math.max(0, ...holds),
    [`${prefix}_idle_earned${suffix}`]: Number(sum(crowded.earned)),
    [`${prefix}_attacker_cost_usdc${suffix}`]: round(forfeited),
    [`${prefix}_client_compensation_usdc${suffix}`]: round(forfeited),
    [`${prefix}_honest_forfeited_usdc${suffix}`]:
      Number(crowded.forfeited.get(crowded.honest.toLowerCase()) ?? 0n) / 1e6,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchSybil((l) => process.stderr.write(`[bench] ${l}\n`))))
    console.log(`${k}: ${v}`);
  process.exit(0);
}
