/**
 * Does cheating pay against the deployed verifiers? A Monte Carlo over the real sampling code
 * (workloads/segments.ts sampleSpans, the verifiers' default budget) and a model of verifier/checks.ts's decision,
 * instead of a formula for a model of it.
 *
 * A strategy commits a checkpoint of n steps with a segment length m of its choice. What it did to the chain is a
 * Plan: the steps whose committed state is not the training of the committed state before it ("fabricated"), the
 * stored boundary states whose own bytes are defective (another step label, undecodable, non-finite) and those it
 * made unreadable. One verifier's check ends in (verifier/checks.ts verifyCheckpoint):
 * - plain refusal when m is not the interval's fixed length (`bad-segments`, before any read);
 * - a fault when a defective boundary is proven by replaying up to it from the last usable state (every verifier
 *   reads every boundary, so this is certain), or when one of its sampled spans with a usable start holds a
 *   fabricated step;
 * - otherwise a plain refusal when a boundary is unreadable (every verifier reads every boundary), else accept.
 * The quorum: one honest fault is a slash (the finder claims, another honest verifier re-checks and co-signs: with
 * one of three colluding, the other two are still two); else 2 plain refusals refuse plainly; else it is paid.
 *
 * What each outcome costs, relative to honest work (the provider's cost per step is at most the price, or it would
 * not offer it, so cost = price bounds the gain from skipping f steps by f·p):
 * - paid: + f·p (the training it skipped);
 * - slashed: − (n − f)·p (the work it did, unpaid) − S (its lock on the job, S = max(minStake, p·n));
 * - plainly refused: − (n − f)·p, and − S too while on probation (no accepted checkpoint yet: the lock goes to the
 *   client), the lock back once proven;
 * and a refusal of either kind fences the provider from the job (it earns nothing more there).
 * Pure; the randomness is passed in (the verifiers' salts are secret to them, so to the provider they are uniform).
 */
import { defaultSegmentSteps, minSegmentSteps, sampleSpans, storedSteps, type Span } from "../workloads/segments.ts";
import { DEFAULT_CONFIG } from "./verifier.ts";

/** The deployment defaults the figures are computed at (ignition/parameters/local.json, verifier DEFAULT_CONFIG). */
export const DEPLOYMENT = {
  /** The registry's minStake, in USDC. */
  minStakeUsdc: 1,
  /** `npm start`'s highest provider price, USDC per step. */
  priceUsdc: 0.001,
  /** Steps each verifier replays besides the last (`--samples`). */
  samples: DEFAULT_CONFIG.samples,
  verifiers: 3,
  /** Checkpoints of the job the per-job figure covers (a job of 10 intervals). */
  jobCheckpoints: 10,
};
export type Deployment = typeof DEPLOYMENT;

export type StrategyName =
  "scattered" | "clustered" | "lazy" | "prefix-copy" | "relabelled" | "poisoned" | "hidden" | "copied";

/** What a strategy did to one checkpoint's chain (steps of 1..n; boundaries are stored steps). */
export type Plan = { fabricated: number[]; defective: number[]; unreadable: number[] };

/** A way to fabricate `fabricated` steps of an n-step checkpoint, and a draw of where (the provider's dice). */
export type Strategy = { name: StrategyName; fabricated: number; plan: (rand: () => number) => Plan };

const plan = (fabricated: number[], defective: number[] = [], unreadable: number[] = []): Plan => ({
  fabricated,
  defective,
  unreadable,
});

/**
 * The strategies tried at interval n with segments of m steps. Every one trains the last step (the always-replayed
 * last step refutes any other, certainly and as a fault):
 * - scattered / clustered: f steps perturbed, anywhere / aligned to as few segments as f allows (the later steps
 *   trained honestly from them);
 * - lazy: every state but the last the start state relabelled; copied: another maker's states, re-signed (its
 *   steps do not replay on this maker's data order);
 * - after an honest prefix of n − 1 − f steps, the rest: `prefix-copy` the prefix's last state as it is (labelled
 *   with the prefix's step), `relabelled` the same relabelled with each step, `poisoned` relabelled with a NaN,
 *   `hidden` relabelled behind boundary blobs nobody can read.
 */
export function strategies(n: number, m = defaultSegmentSteps(n)): Strategy[] {
  const pool = n - 1; // steps 1..n−1 may be faked
  if (pool < 1) return [];
  const sizes = [...new Set([1, 2, m, 2 * m, Math.floor(n / 4), Math.floor(n / 2), pool])].filter(
    (f) => f >= 1 && f <= pool,
  );
  const out: Strategy[] = [];
  for (const f of sizes) {
    out.push({ name: "scattered", fabricated: f, plan: (rand) => plan(distinct(f, pool, rand)) });
    out.push({ name: "clustered", fabricated: f, plan: (rand) => plan(clustered(f, pool, m, rand)) });
    for (const name of COPY_STRATEGIES) out.push({ name, fabricated: f, plan: () => copyPlan(n, m, f, name) });
  }
  out.push({ name: "lazy", fabricated: pool, plan: () => plan(range(1, pool)) });
  out.push({ name: "copied", fabricated: pool, plan: () => plan(range(1, pool)) });
  return out;
}

/** One verifier's check of a checkpoint: a fault (claimable), a plain refusal, or accept. */
export type Finding = "fault" | "plain" | "accept";

/**
 * How one verifier whose sampled spans are `spans` decides a checkpoint of steps 0..n with segment length m built
 * by `p` (verifier/checks.ts, pure): the header's length rule, the scan of every boundary, the sampled replays.
 */
export function findingOf(n: number, m: number, p: Plan, spans: Span[]): Finding {
  if (m !== minSegmentSteps(n)) return "plain";
  const holdsFabricated = (from: number, to: number) => p.fabricated.some((s) => from < s && s <= to);
  const unusable = new Set([...p.defective, ...p.unreadable]);
  const usable = [0, ...storedSteps(0, n, m).filter((s) => !unusable.has(s))];
  if (p.defective.length) {
    // proveDefect: replay from the last usable state before the first defect up to it.
    const q = Math.min(...p.defective);
    const from = usable.filter((s) => s < q).pop()!;
    if (holdsFabricated(from, q)) return "fault";
  }
  for (const span of spans) if (usable.includes(span.from) && holdsFabricated(span.from, span.to)) return "fault";
  return p.unreadable.length || p.defective.length ? "plain" : "accept";
}

/** The quorum's outcome from each verifier's finding; verifier 0 colludes when `colluding` (accepts, confirms nothing). */
export function quorumOutcome(findings: Finding[], colluding: boolean): "slashed" | "refused" | "paid" {
  const honest = colluding ? findings.slice(1) : findings;
  if (honest.includes("fault")) return "slashed";
  return honest.filter((f) => f === "plain").length >= 2 ? "refused" : "paid";
}

export type Outcomes = { paid: number; slashed: number; refused: number };

/**
 * EV(cheat) − EV(honest) in USDC for one checkpoint of n steps with f fabricated, given the outcome probabilities;
 * `probation`: the provider has no accepted checkpoint yet, so a plain refusal forfeits its lock too.
 */
export function checkpointEv(n: number, f: number, o: Outcomes, probation: boolean, d: Deployment = DEPLOYMENT) {
  const p = d.priceUsdc;
  const lock = Math.max(d.minStakeUsdc, p * n);
  const unpaidWork = (n - f) * p;
  return o.paid * f * p - o.slashed * (unpaidWork + lock) - o.refused * (unpaidWork + (probation ? lock : 0));
}

/**
 * EV(cheat) − EV(honest) over a whole job of `checkpoints` intervals, cheating at every one: the first on probation,
 * each later one reached only if every earlier one was paid (a refused or slashed provider is fenced from the job),
 * and then proven. The worst of starting fresh, starting proven (from other jobs), and one honest checkpoint first.
 */
export function jobEv(n: number, f: number, o: Outcomes, d: Deployment = DEPLOYMENT): number {
  const fresh = checkpointEv(n, f, o, true, d);
  const proven = checkpointEv(n, f, o, false, d);
  const run = (first: number, count: number) => {
    let ev = 0;
    let reach = 1;
    for (let k = 0; k < count; k++) {
      ev += reach * (k === 0 ? first : proven);
      reach *= o.paid;
    }
    return ev;
  };
  const J = d.jobCheckpoints;
  return Math.max(run(fresh, J), run(proven, J), run(proven, J - 1));
}

export type CheatRow = {
  strategy: StrategyName;
  interval: number;
  /** The segment length the provider committed. */
  segmentSteps: number;
  fabricated: number;
  /** Outcome shares with three honest verifiers, and with verifier 0 colluding. */
  honest: Outcomes;
  oneColluding: Outcomes;
  /** Worst over probation and proven, per checkpoint and per job; the worst of the two verifier sets. */
  ev: number;
  evOneColluding: number;
  evJob: number;
  evJobOneColluding: number;
};

/** A random bytes32 salt from `rand` (a verifier's secret salt, as the provider sees it). */
export function randomSalt(rand: () => number): string {
  let hex = "0x";
  for (let i = 0; i < 8; i++)
    hex += Math.floor(rand() * 2 ** 32)
      .toString(16)
      .padStart(8, "0");
  return hex;
}

/** Outcome shares of `s` over `trials` checkpoints (three fresh salts each), honest and with one colluding. */
export function simulateStrategy(
  n: number,
  m: number,
  s: Strategy,
  trials: number,
  rand: () => number,
  d: Deployment = DEPLOYMENT,
): { honest: Outcomes; oneColluding: Outcomes } {
  const honest = { paid: 0, slashed: 0, refused: 0 };
  const oneColluding = { paid: 0, slashed: 0, refused: 0 };
  const count = (o: Outcomes, k: "slashed" | "refused" | "paid") => o[k]++;
  const shares = (o: Outcomes): Outcomes => ({
    paid: o.paid / trials,
    slashed: o.slashed / trials,
    refused: o.refused / trials,
  });
  for (let t = 0; t < trials; t++) {
    const p = s.plan(rand);
    const findings = Array.from({ length: d.verifiers }, () =>
      m === minSegmentSteps(n) ? findingOf(n, m, p, sampleSpans(randomSalt(rand), 0, n, m, d.samples)) : "plain",
    );
    count(honest, quorumOutcome(findings, false));
    count(oneColluding, quorumOutcome(findings, true));
  }
  return { honest: shares(honest), oneColluding: shares(oneColluding) };
}

/** The segment lengths a provider may commit at interval n: the fixed one, and shorter and longer ones. */
export function segmentChoices(n: number): number[] {
  const m = defaultSegmentSteps(n);
  return [...new Set([m, 1, 2, 4, Math.ceil(m / 2), 2 * m])].filter((x) => x >= 1 && x <= n);
}

/** One row per strategy and provider-chosen m at interval n, over `trials` checkpoints each. */
export function simulateInterval(
  n: number,
  trials: number,
  rand: () => number,
  d: Deployment = DEPLOYMENT,
): CheatRow[] {
  return segmentChoices(n).flatMap((m) =>
    strategies(n, m).map((s) => {
      const { honest, oneColluding } = simulateStrategy(n, m, s, m === defaultSegmentSteps(n) ? trials : 1, rand, d);
      const worst = (o: Outcomes) =>
        Math.max(checkpointEv(n, s.fabricated, o, true, d), checkpointEv(n, s.fabricated, o, false, d));
      return {
        strategy: s.name,
        interval: n,
        segmentSteps: m,
        fabricated: s.fabricated,
        honest,
        oneColluding,
        ev: worst(honest),
        evOneColluding: worst(oneColluding),
        evJob: jobEv(n, s.fabricated, honest, d),
        evJobOneColluding: jobEv(n, s.fabricated, oneColluding, d),
      };
    }),
  );
}

/** The intervals the figures cover: the demo's (20, 100) and the long jobs' (up to 1,000). */
export const INTERVALS = [10, 20, 50, 100, 200, 500, 1000];

/** Every row at every interval, and the rows that pay the cheater best per checkpoint and per job. */
export function simulateCheats(trials: number, rand: () => number, d: Deployment = DEPLOYMENT) {
  const rows = INTERVALS.flatMap((n) => simulateInterval(n, trials, rand, d));
  const by = (key: (r: CheatRow) => number) => rows.reduce((a, r) => (key(r) > key(a) ? r : a));
  const worst = by((r) => Math.max(r.ev, r.evOneColluding));
  const worstJob = by((r) => Math.max(r.evJob, r.evJobOneColluding));
  return { rows, worst, worstJob };
}

/** The strategies that train an honest prefix and copy the rest. */
export const COPY_STRATEGIES = ["prefix-copy", "relabelled", "poisoned", "hidden"] as const;

/**
 * The plan of a copy strategy: after n − 1 − f trained steps, steps n − f .. n − 1 copied (each committed state is
 * not the training of the one before it); the copied boundaries before n − 1 (n − 1 is always relabelled, so the
 * last step replays) are defective (prefix-copy: the prefix's label; poisoned: a NaN) or unreadable (hidden).
 */
export function copyPlan(n: number, m: number, f: number, name: (typeof COPY_STRATEGIES)[number]): Plan {
  const copied = range(n - f, n - 1);
  const boundaries = storedSteps(0, n, m).filter((s) => s >= n - f && s < n - 1);
  if (name === "relabelled") return plan(copied);
  if (name === "hidden") return plan(copied, [], boundaries);
  return plan(copied, boundaries);
}

/**
 * The finding's attack at the fixed segment length: `share` of the n steps fabricated by a copy strategy (the
 * prefix's last state as it is, by default); outcome shares with three honest verifiers and with one colluding.
 */
export function partialFabrication(
  n: number,
  share: number,
  trials: number,
  rand: () => number,
  name: (typeof COPY_STRATEGIES)[number] = "prefix-copy",
) {
  const f = Math.round(share * n);
  const m = defaultSegmentSteps(n);
  return simulateStrategy(n, m, { name, fabricated: f, plan: () => copyPlan(n, m, f, name) }, trials, rand);
}

function distinct(f: number, pool: number, rand: () => number): number[] {
  const picked = new Set<number>();
  while (picked.size < f) picked.add(1 + Math.floor(rand() * pool));
  return [...picked];
}

function clustered(f: number, pool: number, m: number, rand: () => number): number[] {
  const segments = Math.max(1, Math.floor((pool - f) / m) + 1);
  const from = Math.min(pool - f, Math.floor(rand() * segments) * m);
  return range(from + 1, from + f);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}
