/**
 * Does cheating pay against the deployed verifiers? A Monte Carlo over the real sampling code
 * (workloads/segments.ts sampleSpans, the verifiers' default budget and segment length) instead of a formula for a
 * model of it (issue 19: the old proof assumed a uniform single-step sampler; the deployed one replayed no pool
 * segment at all 96 % of the time at interval 1,000).
 *
 * A strategy fabricates some steps of a checkpoint instead of training them. A verifier catches it when one of its
 * replayed spans holds a fabricated step (a span (from, to] replays from its stored start and compares every step
 * in it). With fault claims one catch is enough: the others re-check it with one step's replay and sign the
 * slashing refusal, so with three honest verifiers q = P(any of three catches); with one of them colluding with the
 * provider (never sampling, never confirming) the two honest ones still confirm each other: q = P(any of two).
 *
 * The cheater's gain over honest work is at most f × price (the training it skipped costs it no more than it is
 * paid for, or it would not offer that price); when caught it loses the checkpoint's pay, I × price, and its lock
 * on the job, max(minStake, price × I). So EV(cheat) − EV(honest) ≤ f·p − q·(I·p + S). Pure; the randomness is
 * passed in (the verifiers' salts are secret to them, so to the provider they are uniform).
 */
import { defaultSegmentSteps, sampleSpans, type Span } from "../workloads/index.ts";
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
};

export type StrategyName = "scattered" | "clustered" | "lazy" | "lazy-prefix";

/** A way to fabricate f of the steps 1..I−1 (the last step is always replayed, so no strategy fakes it). */
export type Strategy = { name: StrategyName; fabricated: number; steps: (rand: () => number) => number[] };

/** The strategies tried at interval `n` (checkpoint over steps 0..n, segment length m). */
export function strategies(n: number, m = defaultSegmentSteps(n)): Strategy[] {
  const pool = n - 1; // steps 1..n−1 may be faked
  if (pool < 1) return [];
  const sizes = [...new Set([1, 2, m, 2 * m, Math.floor(n / 2)])].filter((f) => f >= 1 && f <= pool);
  const out: Strategy[] = [];
  for (const f of sizes) {
    out.push({ name: "scattered", fabricated: f, steps: (rand) => distinct(f, pool, rand) });
    // Aligned to a segment: as few segments tainted as f steps allow (the cheater knows where segments start).
    out.push({
      name: "clustered",
      fabricated: f,
      steps: (rand) => {
        const segments = Math.max(1, Math.floor((pool - f) / m) + 1);
        const from = Math.min(pool - f, Math.floor(rand() * segments) * m);
        return Array.from({ length: f }, (_, i) => from + 1 + i);
      },
    });
  }
  out.push({ name: "lazy", fabricated: pool, steps: () => range(1, pool) });
  const prefix = Math.floor(n / 2);
  if (pool - prefix >= 1)
    out.push({ name: "lazy-prefix", fabricated: pool - prefix, steps: () => range(prefix + 1, pool) });
  return out;
}

/** Whether a verifier whose replayed spans are `spans` catches a checkpoint whose `fabricated` steps were faked. */
export function catches(spans: Span[], fabricated: number[]): boolean {
  return fabricated.some((s) => spans.some((span) => span.from < s && s <= span.to));
}

export type CheatRow = {
  strategy: StrategyName;
  interval: number;
  fabricated: number;
  /** P(caught and slashed), three honest verifiers. */
  caught: number;
  /** P(caught and slashed) with one verifier colluding (only two sample). */
  caughtOneColluding: number;
  /** EV(cheat) − EV(honest) in USDC per checkpoint, three honest verifiers; and with one colluding. */
  ev: number;
  evOneColluding: number;
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

/**
 * One row per strategy at interval `n`, over `trials` checkpoints each, for segments of `m` steps (the default, or
 * any shorter length a provider may choose: the verifiers only bound it from above).
 */
export function simulateInterval(
  n: number,
  trials: number,
  rand: () => number,
  d = DEPLOYMENT,
  m = defaultSegmentSteps(n),
): CheatRow[] {
  const lock = Math.max(d.minStakeUsdc, d.priceUsdc * n);
  const loss = n * d.priceUsdc + lock;
  return strategies(n, m).map((s) => {
    let any = 0;
    let anyOfTwo = 0;
    for (let t = 0; t < trials; t++) {
      const faked = s.steps(rand);
      const hits = Array.from({ length: d.verifiers }, () =>
        catches(sampleSpans(randomSalt(rand), 0, n, m, d.samples), faked),
      );
      if (hits.some(Boolean)) any++;
      if (hits.slice(1).some(Boolean)) anyOfTwo++;
    }
    const caught = any / trials;
    const caughtOneColluding = anyOfTwo / trials;
    const gain = s.fabricated * d.priceUsdc;
    return {
      strategy: s.name,
      interval: n,
      fabricated: s.fabricated,
      caught,
      caughtOneColluding,
      ev: gain - caught * loss,
      evOneColluding: gain - caughtOneColluding * loss,
    };
  });
}

/** The intervals the figures cover: the demo's (20, 100) and the long jobs' (up to 1,000). */
export const INTERVALS = [10, 20, 50, 100, 200, 500, 1000];

/** Every row at every interval, and the one that pays the cheater best (one colluding verifier included). */
export function simulateCheats(trials: number, rand: () => number, d = DEPLOYMENT) {
  const rows = INTERVALS.flatMap((n) => simulateInterval(n, trials, rand, d));
  const worst = rows.reduce((a, r) => (Math.max(r.ev, r.evOneColluding) > Math.max(a.ev, a.evOneColluding) ? r : a));
  return { rows, worst };
}

function distinct(f: number, pool: number, rand: () => number): number[] {
  const picked = new Set<number>();
  while (picked.size < f) picked.add(1 + Math.floor(rand() * pool));
  return [...picked];
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
