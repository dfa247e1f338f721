// The round's outer step: K lanes each trained H inner steps from the round's accepted state S_r; the
// outer step merges their updates into S_{r+1}. Pure: no I/O, no clock, no randomness.
//
// The outer optimizer is SGD with Nesterov momentum on the outer gradient (DiLoCo, Douillard et al. 2023; PyTorch's
// `SGD(nesterov=True)`), with the rate η = a/b and the momentum μ = c/d exact rationals of small integers:
//   Δ    = S_r − (Σ_k L_k) / K                 (the lanes' mean update; L_k = lane k's end weights)
//   v'   = round32( μ·v + Δ )                  (the outer momentum, stored as float32)
//   S'   = round32( S_r − η·(μ·v' + Δ) )       (v' the stored, rounded value)
//   m'   = round32( (Σ_k m_k) / K )            (the inner optimizer's state: the lanes' mean; K = 1 keeps it)
// elementwise, where round32 is IEEE 754 binary32 round-to-nearest-even of the EXACT rational value (sums,
// products by a, b, c, d, K and the one division are exact; only the final rounding loses anything).
//
// Why the same bits everywhere. Every output element is a mathematical function of the input float32 values and the
// integers a, b, c, d, K: the correct rounding of one exact rational number (a zero's sign is fixed by rule, below).
// Any code that computes it exactly gives the same bits, on any machine and in any JS engine; the lanes' order cannot
// matter because the exact sum is commutative (the lanes are still taken in lane order, for the record). This file
// computes it two ways, both exact:
//  - fast path (float64): each term is an integer coefficient < 2^23 times a float32 (24-bit significand), so every
//    product is exact in float64 (≤ 47 bits). The terms are added in a fixed order, each addition checked by TwoSum
//    (Knuth): a nonzero error term means the float64 sum was rounded, and the element goes to the exact path. The
//    exact numerator N over the integer D is then divided once in float64 (correctly rounded: IEEE 754 and ECMAScript
//    require it), q = round64(N/D), and Math.fround(q) (ECMAScript: roundTiesToEven) is round32(N/D) unless q lies
//    exactly on a float32 midpoint: rounding is monotone and every float32 midpoint is a float64, so q and N/D are on
//    the same side of every midpoint that q does not equal (no double-rounding error). A q on a midpoint goes to the
//    exact path. (It never does: N − D·m would be a nonzero multiple of N's float64 quantum, ≥ 2^(e_N − 52), while
//    landing on m needs |N − D·m| ≤ D·ulp64(m)/2 < 2^(e_N − 52) — so the check is a guard, not a path.) float64 can
//    neither overflow (|N| < 2^128·2^23·10) nor underflow (|N/D| ≥ 2^−149/2^23) here.
//  - exact path (BigInt): every float32 is an integer multiple of 2^−149, so N·2^149 is an integer; the quotient is
//    rounded to 24 significant bits (or to the subnormal quantum 2^−149) with ties to even by integer division.
// test/workloads/merge.ts checks the two paths against each other on random and extreme inputs.
//
// Zeros. An exactly zero S' or m' is −0 when every lane holds −0 there, else +0 (symmetric in the lanes; K = 1 then
// keeps the lane's own zero, so the K = 1 reduction below holds for −0 too); an exactly zero v' is +0.
//
// K = 1 is today's job. With η = 1 and μ = 0 (TODAY_OUTER) the exact value is S' = S_r − (S_r − L) = L and m' = m:
// the lane's end state bit for bit, and with μ = 0 there is no outer state at all (`momentum: []`) and the round's
// state hash is today's stateHash. So a job of K = 1 lane takes TODAY_OUTER (`outerParamsFor(1)`) and is today's job
// exactly; a K = 1 job with DiLoCo's 0.7/0.9 would be a different (valid) job, which no job names today.
import { ByteWriter } from "./bytes.ts";
import { NonFiniteError, WorkloadError } from "./errors.ts";
import { stateHash } from "./state.ts";
import type { NamedTensor, TrainingState } from "./types.ts";

/** A non-negative rational num/den of small integers (num ≤ MAX_TERM, 1 ≤ den ≤ MAX_TERM). */
export type Ratio = { num: number; den: number };
/** The outer optimizer: Nesterov SGD with rate `lr` and momentum `momentum`, both exact rationals. */
export type OuterParams = { lr: Ratio; momentum: Ratio };
/** The outer optimizer's state: one momentum tensor per parameter, or none when the momentum is 0. */
export type OuterState = { momentum: NamedTensor[] };
export type MergeResult = { state: TrainingState; outer: OuterState };
/** forceExact: every element by the BigInt path (tests compare it with the fast path). */
export type MergeOptions = { forceExact?: boolean };

export const MAX_LANES = 8;
/** Largest numerator or denominator of the outer rate and momentum: keeps every coefficient < 2^23. */
export const MAX_TERM = 1000;
/** The outer step of today's job: S' = the lane's end state, no outer state. */
export const TODAY_OUTER: OuterParams = { lr: { num: 1, den: 1 }, momentum: { num: 0, den: 1 } };
/** DiLoCo's published outer optimizer: Nesterov, rate 0.7, momentum 0.9. */
export const DILOCO_OUTER: OuterParams = { lr: { num: 7, den: 10 }, momentum: { num: 9, den: 10 } };

/** The outer parameters a job of `lanes` lanes takes: K = 1 is today's job (TODAY_OUTER), K > 1 DiLoCo's. */
export function outerParamsFor(lanes: number): OuterParams {
  checkLaneCount(lanes);
  return lanes === 1 ? TODAY_OUTER : DILOCO_OUTER;
}

export type MergeErrorCode = "LANE_COUNT" | "SHAPE" | "STEP" | "PARAMS" | "OUTER_STATE";

/** A merge refused: bad lane count, tensors that do not line up, lanes at different steps, bad outer parameters. */
export class MergeError extends WorkloadError {
  constructor(code: MergeErrorCode, message: string) {
    super(code, `outer merge: ${message}`);
  }
}

function checkLaneCount(k: number): void {
  if (!Number.isInteger(k) || k < 1 || k > MAX_LANES)
    throw new MergeError("LANE_COUNT", `a round has 1 to ${MAX_LANES} lanes, got ${k}`);
}

function checkRatio(what: string, r: Ratio, positive: boolean): void {
  const ok =
    Number.isInteger(r.num) &&
    Number.isInteger(r.den) &&
    r.num >= (positive ? 1 : 0) &&
    r.num <= MAX_TERM &&
    r.den >= 1 &&
    r.den <= MAX_TERM;
  if (!ok)
    throw new MergeError(
      "PARAMS",
      `${what} must be a ratio of integers ${positive ? "1" : "0"}..${MAX_TERM} over 1..${MAX_TERM}, got ${r.num}/${r.den}`,
    );
}

/** Checks outer parameters: rate > 0, momentum in [0, 1). */
export function checkOuterParams(p: OuterParams): void {
  checkRatio("outer learning rate", p.lr, true);
  checkRatio("outer momentum", p.momentum, false);
  if (p.momentum.num >= p.momentum.den) throw new MergeError("PARAMS", "outer momentum must be below 1");
}

const hasMomentum = (p: OuterParams) => p.momentum.num !== 0;

/** The outer state a job starts with: zero momentum shaped like the state's weights (none when μ = 0). */
export function initialOuterState(state: TrainingState, params: OuterParams): OuterState {
  checkOuterParams(params);
  if (!hasMomentum(params)) return { momentum: [] };
  return {
    momentum: state.weights.map((w) => ({ name: w.name, dims: w.dims.slice(), data: new Float32Array(w.data.length) })),
  };
}

const OUTER_MAGIC = Buffer.from("GPCOUTER", "ascii");
export const OUTER_VERSION = 1;
const ROUND_STATE_TAG = Buffer.from("gpuchain/round-state\0", "ascii");

/**
 * sha256 of the outer state's canonical encoding, 0x-hex. Layout (little-endian):
 *   "GPCOUTER" | u16 version=1 | u16 n | tensor*     tensor = as in state.ts (u8 nameLen | name | u8 rank | u32 dims | f32 data)
 */
export function outerStateHash(o: OuterState): string {
  const w = new ByteWriter().bytes(OUTER_MAGIC).u16(OUTER_VERSION).u16(o.momentum.length);
  for (const t of o.momentum) {
    const name = Buffer.from(t.name, "utf8");
    w.u8(name.length).bytes(name).u8(t.dims.length);
    for (const d of t.dims) w.u32(d);
    w.f32s(t.data);
  }
  return w.sha256();
}

/**
 * The hash a round's state is accepted under: the training state and the outer optimizer's state together,
 * sha256("gpuchain/round-state\0" ‖ stateHash ‖ outerStateHash); with no outer state (μ = 0: today's job) just
 * today's stateHash.
 */
export function roundStateHash(state: TrainingState, outer: OuterState): string {
  const s = stateHash(state);
  if (outer.momentum.length === 0) return s;
  return new ByteWriter().bytes(ROUND_STATE_TAG).hex32(s).hex32(outerStateHash(outer)).sha256();
}

function checkLike(what: string, got: NamedTensor[], ref: NamedTensor[]): void {
  if (got.length !== ref.length)
    throw new MergeError("SHAPE", `${what} has ${got.length} tensors, the round's state ${ref.length}`);
  for (let i = 0; i < ref.length; i++) {
    const g = got[i];
    const r = ref[i];
    if (g.name !== r.name || g.dims.join() !== r.dims.join() || g.data.length !== r.data.length)
      throw new MergeError(
        "SHAPE",
        `${what} tensor ${i} is ${g.name} [${g.dims.join(",")}] (${g.data.length} values), ` +
          `the round's state has ${r.name} [${r.dims.join(",")}] (${r.data.length})`,
      );
  }
}

function checkFinite(what: string, ts: NamedTensor[]): void {
  for (const t of ts)
    for (let i = 0; i < t.data.length; i++)
      if (!Number.isFinite(t.data[i])) throw new NonFiniteError(`${what} ${t.name}`, i, t.data[i]);
}

// ---- exact rounding -----------------------------------------------------------------------------------------------

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
const HALF_MIN_SUB = 2 ** -150;
const SCALE = 2 ** 149;

/** True when the float64 q lies exactly halfway between two adjacent float32 values (where fround may double-round). */
function onMidpoint(q: number, f: number): boolean {
  if (q === f) return false;
  if (f === 0) return Math.abs(q) === HALF_MIN_SUB;
  if (!Number.isFinite(f)) return false; // overflow: refused by the caller
  F32[0] = f;
  // the float32 neighbour of f on q's side: one more in magnitude when q is farther from zero
  U32[0] += Math.abs(q) > Math.abs(f) ? 1 : -1;
  return q === (f + F32[0]) / 2;
}

/** round32(n / d) for integers n and d > 0, ties to even (the caller folds any power-of-two scale into d). */
function roundRational(n: bigint, d: bigint): number {
  if (n === 0n) return 0;
  const neg = n < 0n;
  const a = neg ? -n : n;
  // e: 2^e ≤ a/d < 2^(e+1)
  let e = a.toString(2).length - d.toString(2).length;
  if (e >= 0 ? a < d << BigInt(e) : a << BigInt(-e) < d) e--;
  const qe = Math.max(e - 23, -149); // the quantum's exponent: 24 significant bits, or the subnormal step
  const num = qe < 0 ? a << BigInt(-qe) : a;
  const den = qe > 0 ? d << BigInt(qe) : d;
  let q = num / den;
  const r2 = 2n * (num - q * den);
  if (r2 > den || (r2 === den && (q & 1n) === 1n)) q++;
  const v = Number(q) * 2 ** qe; // q ≤ 2^24: exact; the power of two is exact in float64
  return Math.fround(neg ? -v : v); // exact unless ≥ 2^128 (then Infinity, refused by the caller)
}

/** A float32 as an exact integer count of 2^−149. */
const units = (x: number): bigint => BigInt(x * SCALE);

/** Elements the BigInt path computed since the module loaded (a cost figure for the bench, not part of any result). */
export const mergeCounters = { exactPath: 0, elements: 0 };

/**
 * round32(Σ coef[i]·x[i] / den) exactly: float64 with TwoSum checks, or BigInt when a sum or the rounding is not exact.
 * coef are integers below 2^23 in magnitude, x float32 values, den a positive integer below 2^23.
 */
function combine(coef: Float64Array, x: Float64Array, n: number, den: number, forceExact: boolean): number {
  mergeCounters.elements++;
  if (!forceExact) {
    let s = coef[0] * x[0];
    let exact = true;
    for (let i = 1; i < n && exact; i++) {
      const b = coef[i] * x[i];
      const t = s + b;
      const bb = t - s;
      if (s - (t - bb) + (b - bb) !== 0) exact = false;
      s = t;
    }
    if (exact) {
      if (s === 0) return 0;
      const q = s / den;
      const f = Math.fround(q);
      if (!onMidpoint(q, f)) return f;
    }
  }
  mergeCounters.exactPath++;
  let acc = 0n;
  for (let i = 0; i < n; i++) if (coef[i] !== 0 && x[i] !== 0) acc += BigInt(coef[i]) * units(x[i]);
  return roundRational(acc, BigInt(den) << 149n); // acc counts 2^−149
}

// ---- the outer step ------------------------------------------------------------------------------------------------

/**
 * The outer step of a round: S_{r+1} and the new outer state from the round's accepted state `start`, the outer
 * state `outer` and the accepted lanes' end states `lanes` in lane order (ascending lane index). Every lane must be at
 * the same step (start.step + H); the result is at that step. Throws MergeError on a bad lane count, tensors that do
 * not line up, lanes at different steps or bad parameters, NonFiniteError on a NaN/±∞ input or an overflowing result.
 */
export function mergeLanes(
  start: TrainingState,
  outer: OuterState,
  lanes: TrainingState[],
  params: OuterParams,
  opts: MergeOptions = {},
): MergeResult {
  const K = lanes.length;
  checkLaneCount(K);
  checkOuterParams(params);
  checkLike("the round's inner state", start.momentum, start.weights);
  const withMomentum = hasMomentum(params);
  if (withMomentum) checkLike("the outer momentum", outer.momentum, start.weights);
  else if (outer.momentum.length !== 0)
    throw new MergeError("OUTER_STATE", "an outer optimizer without momentum keeps no outer state");
  const step = lanes[0].step;
  if (!Number.isSafeInteger(step) || step <= start.step)
    throw new MergeError("STEP", `lane 0 is at step ${step}, the round started at step ${start.step}`);
  lanes.forEach((l, k) => {
    if (l.step !== step) throw new MergeError("STEP", `lane ${k} is at step ${l.step}, lane 0 at ${step}`);
    checkLike(`lane ${k}'s weights`, l.weights, start.weights);
    checkLike(`lane ${k}'s inner state`, l.momentum, start.weights);
  });
  checkFinite("start", start.weights);
  checkFinite("outer momentum", outer.momentum);
  lanes.forEach((l, k) => {
    checkFinite(`lane ${k}`, l.weights);
    checkFinite(`lane ${k}`, l.momentum);
  });

  const exact = opts.forceExact === true;
  const { num: a, den: b } = params.lr;
  const { num: c, den: d } = params.momentum;
  // v' = (c·K·v + d·K·S − d·Σ L_k) / (d·K)
  // S' = ((b − a)·d·K·S − a·c·K·v' + a·d·Σ L_k) / (b·d·K)
  // m' = (Σ m_k) / K
  const vDen = d * K;
  const sDen = b * d * K;
  const coef = new Float64Array(K + 2);
  const x = new Float64Array(K + 2);
  const ones = new Float64Array(K).fill(1);

  const weights: NamedTensor[] = [];
  const inner: NamedTensor[] = [];
  const momentum: NamedTensor[] = [];
  for (let p = 0; p < start.weights.length; p++) {
    const S = start.weights[p].data;
    const n = S.length;
    const Ls = lanes.map((l) => l.weights[p].data);
    const Ms = lanes.map((l) => l.momentum[p].data);
    const V = withMomentum ? outer.momentum[p].data : undefined;
    const outW = new Float32Array(n);
    const outM = new Float32Array(n);
    const outV = withMomentum ? new Float32Array(n) : undefined;
    for (let i = 0; i < n; i++) {
      let vNew = 0;
      if (V && outV) {
        coef[0] = c * K;
        x[0] = V[i];
        coef[1] = d * K;
        x[1] = S[i];
        for (let k = 0; k < K; k++) {
          coef[2 + k] = -d;
          x[2 + k] = Ls[k][i];
        }
        vNew = combine(coef, x, K + 2, vDen, exact);
        if (!Number.isFinite(vNew)) throw new NonFiniteError(`merged outer momentum ${start.weights[p].name}`, i, vNew);
        outV[i] = vNew;
      }
      coef[0] = (b - a) * d * K;
      x[0] = S[i];
      coef[1] = -a * c * K;
      x[1] = vNew;
      for (let k = 0; k < K; k++) {
        coef[2 + k] = a * d;
        x[2 + k] = Ls[k][i];
      }
      let w = combine(coef, x, K + 2, sDen, exact);
      if (w === 0 && Ls.every((L) => Object.is(L[i], -0))) w = -0;
      if (!Number.isFinite(w)) throw new NonFiniteError(`merged ${start.weights[p].name}`, i, w);
      outW[i] = w;
      for (let k = 0; k < K; k++) x[k] = Ms[k][i];
      let m = combine(ones, x, K, K, exact);
      if (m === 0 && Ms.every((M) => Object.is(M[i], -0))) m = -0;
      outM[i] = m;
    }
    const dims = start.weights[p].dims.slice();
    const name = start.weights[p].name;
    weights.push({ name, dims, data: outW });
    inner.push({ name: start.momentum[p].name, dims: dims.slice(), data: outM });
    if (outV) momentum.push({ name, dims: dims.slice(), data: outV });
  }
  return { state: { step, weights, momentum: inner }, outer: { momentum } };
}
