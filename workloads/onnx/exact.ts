// Portable arithmetic: building blocks whose every float result is fixed by IEEE 754 alone.
// Each node is one correctly rounded elementwise operation (or pure data movement), and every sum
// over an axis is a fixed tree of elementwise Adds, so no CPU kernel, SIMD width or FMA can change a
// bit (the rule and its reasons are in workloads/README.md). A GPU's WGSL Div and Sqrt are not
// correctly rounded (an H200's were not): reciprocal and inverseSqrt below are made of + − × and
// selections alone, which it does round correctly (portableOps.ts gpuInexactOps lists what remains).
import { GraphBuilder, attrInt, attrInts } from "./builder.ts";

/**
 * Elements one product tensor of a contraction should hold (at the largest micro-batch): small enough
 * to stay in a core's cache, large enough that per-node overhead does not dominate.
 */
export const GROUP_ELEMENTS = 1 << 16;

/** An int64 constant per distinct value list: many Slices share their starts, ends and axes. */
function i64(g: GraphBuilder, values: number[]): string {
  const key = `i64:${values.join(",")}`;
  let name = g.shared.get(key);
  if (!name) g.shared.set(key, (name = g.constInt64(values)));
  return name;
}

function f32(g: GraphBuilder, v: number): string {
  const key = `f32:${v}`;
  let name = g.shared.get(key);
  if (!name) g.shared.set(key, (name = g.constFloat([v], [])));
  return name;
}

/**
 * The constant v with `rank` axes of length 1 (a scalar when rank is 0): the same value in every element it
 * broadcasts to, so the same bits as the scalar. For operands whose last axis has length 1 (a row statistic
 * [R, 1]): onnxruntime's CPU broadcast of a rank-0 operand against them runs one element at a time (measured
 * ≈ 40× slower than against [R] or with a rank-matched [1, 1]: 110 against 2.7 µs for an Add on [4096, 1]).
 */
export function scalarOfRank(g: GraphBuilder, v: number, rank: number): string {
  if (rank === 0) return f32(g, v);
  const key = `f32:${v}:rank${rank}`;
  let name = g.shared.get(key);
  if (!name) g.shared.set(key, (name = g.constFloat([v], new Array(rank).fill(1))));
  return name;
}

export const slice = (g: GraphBuilder, t: string, axis: number, lo: number, hi: number): string =>
  g.op("Slice", [t, i64(g, [lo]), i64(g, [hi]), i64(g, [axis])]);
export const unsqueeze = (g: GraphBuilder, t: string, axes: number[]): string => g.op("Unsqueeze", [t, i64(g, axes)]);
export const squeeze = (g: GraphBuilder, t: string, axes: number[]): string => g.op("Squeeze", [t, i64(g, axes)]);
export const transpose = (g: GraphBuilder, t: string, perm: number[]): string =>
  g.op("Transpose", [t], [attrInts("perm", perm)]);
export const concat = (g: GraphBuilder, ts: string[], axis: number): string =>
  ts.length === 1 ? ts[0] : g.op("Concat", ts, [attrInt("axis", axis)]);
export const scalar = f32;

/**
 * Σ(t·0) along `axis`: ±0, or NaN where that slice of t holds a NaN or ±∞ — in any order, and no overflow (a sum
 * of zeros). Added to a block scale (or to values), it makes what it reaches NaN on every device.
 */
export const nanCheck = (g: GraphBuilder, t: string, axis: number, keepdims = false): string =>
  g.op("ReduceSum", [g.op("Mul", [t, f32(g, 0)]), i64(g, [axis])], [attrInt("keepdims", keepdims ? 1 : 0)]);

/**
 * (Σ t)·0 along `axis`: one read of t instead of nanCheck's product pass. The same as nanCheck only while the sum
 * cannot overflow in any order (onnx/integer.ts quantizeRows `lean`: blocks of at most MAX_LEAN_BLOCK values below
 * the split's limit); otherwise its NaN may follow the order.
 */
export const sumTimesZero = (g: GraphBuilder, t: string, axis: number, keepdims = false): string =>
  g.op("Mul", [g.op("ReduceSum", [t, i64(g, [axis])], [attrInt("keepdims", keepdims ? 1 : 0)]), f32(g, 0)]);

type Combine = (a: string, b: string) => string;

/**
 * Folds axis `axis` (length n) to length 1 in a fixed order: t[0:h] ∘ t[h:2h] with h = ⌊n/2⌋,
 * the odd last slice carried to the next level. The order depends on n only, never on other axes.
 */
function foldAxis(g: GraphBuilder, t: string, n: number, axis: number, combine: Combine): string {
  while (n > 1) {
    const h = Math.floor(n / 2);
    // one Split per level, not two or three Slices: the same halves, fewer nodes (node overhead dominates small sums)
    const [a, b, rest] = split(g, t, axis, n % 2 ? [h, h, 1] : [h, h]);
    t = combine(a, b);
    if (rest) t = concat(g, [t, rest], axis);
    n = h + (n % 2);
  }
  return t;
}

/**
 * Balanced tree over n lazily made terms: (terms 0…⌈n/2⌉−1) ∘ (the rest), recursively. Emitted depth
 * first, so each term is made just before it is consumed and few are alive at once.
 */
function treeOf(n: number, term: (i: number) => string, combine: Combine, lo = 0): string {
  if (n === 1) return term(lo);
  const left = Math.ceil(n / 2);
  const l = treeOf(left, term, combine, lo);
  return combine(l, treeOf(n - left, term, combine, lo + left));
}

/** Splits axis `axis` into consecutive parts of the given sizes (one Split node). */
export function split(g: GraphBuilder, t: string, axis: number, sizes: number[]): string[] {
  if (sizes.length === 1) return [t];
  const outs = sizes.map(() => g.fresh("Split"));
  g.opMulti("Split", [t, i64(g, sizes)], [attrInt("axis", axis)], outs);
  return outs;
}

const add =
  (g: GraphBuilder): Combine =>
  (a, b) =>
    g.op("Add", [a, b]);

/** Σ over axis (length n), keeping the axis with length 1. */
export const sumAxis = (g: GraphBuilder, t: string, n: number, axis: number): string => foldAxis(g, t, n, axis, add(g));

/**
 * Σ over the last axis (length n) of a rank-`rank` tensor, keeping it: the same tree as sumAxis (the same pairs
 * added in the same order, so the same bits), folded with the axis moved to the front. Slices of the outermost
 * axis are contiguous copies; those of the innermost are strided (measured ≈ 3× faster on [4096, 64]) — except the
 * first levels while halves are ≥ 16 wide: one Split along the last axis copies runs that long about as fast, and
 * the transpose then moves a quarter of the data.
 */
export function sumLast(g: GraphBuilder, t: string, n: number, rank: number): string {
  // the first (at most two) levels, while their halves are at least 16 wide, in place along the last axis (one Split
  // per level): the transpose then moves a quarter of the data (sums over 64 and 96: 0.36 → 0.29 and 0.66 → 0.50 ms
  // on [4096, n], microbenchmark); the same pairs in the same order as foldAxis
  for (let level = 0; level < 2 && Math.floor(n / 2) >= 16; level++) {
    const h = Math.floor(n / 2);
    const [a, b, rest] = split(g, t, rank - 1, n % 2 ? [h, h, 1] : [h, h]);
    t = g.op("Add", [a, b]);
    if (rest) t = concat(g, [t, rest], rank - 1);
    n = h + (n % 2);
  }
  const front = [rank - 1, ...Array.from({ length: rank - 1 }, (_, i) => i)];
  const back = [...Array.from({ length: rank - 1 }, (_, i) => i + 1), 0];
  return transpose(g, foldAxis(g, transpose(g, t, front), n, 0, add(g)), back);
}

/** max over axis (length n), keeping it: Where(a > b, a, b), so ±0 ties resolve by position, not by kernel. */
export const maxAxis = (g: GraphBuilder, t: string, n: number, axis: number): string =>
  foldAxis(g, t, n, axis, (a, b) => g.op("Where", [g.op("Greater", [a, b]), a, b]));

/**
 * Σ_k a[k]·b[k] over axis 0 (length n) of two broadcastable operands, axis 0 dropped, in a fixed order:
 * axis 0 is cut into groups of m rows (a last group of the remaining r < m rows aside); the products of
 * the full groups are added as a balanced tree (treeOf), that [m, …] sum is folded by sumAxis, the
 * remainder group is folded the same way and added last. Only the operands are split, never a product.
 */
export function contract(g: GraphBuilder, a: string, b: string, n: number, m: number): string {
  m = Math.min(m, n);
  const full = Math.floor(n / m);
  const r = n - full * m;
  const sizes = [...new Array(full).fill(m), ...(r ? [r] : [])];
  const [as, bs] = [split(g, a, 0, sizes), split(g, b, 0, sizes)];
  const mul = (i: number) => g.op("Mul", [as[i], bs[i]]);
  let sum = sumAxis(g, treeOf(full, mul, add(g)), m, 0);
  if (r) sum = g.op("Add", [sum, sumAxis(g, mul(full), r, 0)]);
  return squeeze(g, sum, [0]);
}

/**
 * h [...rows, K] · w [K, J] → [...rows, J] (rank = rank of h), each output a fixed tree over k.
 * `maxRows` (the most rows a call may carry) only sizes the groups, so it fixes the tree too.
 */
export function matmulRows(
  g: GraphBuilder,
  h: string,
  rank: number,
  w: string,
  K: number,
  J: number,
  maxRows: number,
): string {
  const perm = [rank - 1, ...Array.from({ length: rank - 1 }, (_, i) => i)];
  const hk = unsqueeze(g, transpose(g, h, perm), [rank]); // [K, ...rows, 1]
  const wk = unsqueeze(
    g,
    w,
    Array.from({ length: rank - 1 }, (_, i) => i + 1),
  ); // [K, 1…, J]
  return contract(g, hk, wk, K, groupRows(maxRows * J));
}

/** Rows of axis 0 per group when one row of the product holds `rowElements` elements. */
export const groupRows = (rowElements: number): number => Math.max(1, Math.floor(GROUP_ELEMENTS / rowElements));

/** x > 0, one node per tensor and graph: ReLU's forward and its gradient's mask share it. */
export function positive(g: GraphBuilder, x: string): string {
  const key = `positive:${x}`;
  let name = g.shared.get(key);
  if (!name) g.shared.set(key, (name = g.op("Greater", [x, f32(g, 0)])));
  return name;
}

/** max(x, 0) as a selection: Relu kernels may return −0 or +0 for −0. */
export const relu = (g: GraphBuilder, x: string): string => g.op("Where", [positive(g, x), x, f32(g, 0)]);

/** ReLU's gradient: dy where the pre-activation x was positive, else 0. */
export const reluGrad = (g: GraphBuilder, x: string, dy: string): string =>
  g.op("Where", [positive(g, x), dy, f32(g, 0)]);

/** Horner evaluation c[0]·xⁿ + … + c[n], one Mul and one Add node per coefficient (no fused multiply-add). */
function horner(g: GraphBuilder, x: string, coeffs: number[], rank = 0): string {
  let p = scalarOfRank(g, coeffs[0], rank);
  for (const c of coeffs.slice(1)) p = g.op("Add", [g.op("Mul", [p, x]), scalarOfRank(g, c, rank)]);
  return p;
}

// exp of x ≤ 0 by scaling and squaring, for softmaxes: e^x = (e^(x/2^m))^(2^m) with y = x/2^m exact (a power of
// two), e^y by a polynomial 1 + c₁y + … + c_n·yⁿ fitted for relative error on [floor/2^m, 0] (Horner: n products and
// n sums), then m squarings. Each squaring doubles the relative error and adds a rounding. Below `floor` the result
// is an exact 0, selected after the fact (there the polynomial of a large |y| is not kept). No Div (a GPU's is not
// correctly rounded; the [3/3] Padé quotient of v1–v3 was one), no table lookup, no index cast: every node is one
// correctly rounded +, −, × or selection. EXP_LOSS (every loss softmax, since v5): m = 5 on [−16, 0], degree 4 (fit
// 5.9·10⁻⁷ on [−0.5, 0]), 16 nodes; a probability below e^−16 ≈ 1.1·10⁻⁷ of the row's largest is 0 (v4: m = 7 on
// [−80, 0], degree 5, 20 nodes). The coefficients are float32 values (the fit rounded), so the graph holds exactly
// these. Error bound: test/workloads/transformer.ts.
export const EXP_LOSS = {
  squarings: 5,
  floor: -16,
  coeffs: [1, 0.9999663233757019, 0.49937060475349426, 0.16291941702365875, 0.03258311748504639],
};

/**
 * The attention weights' exp (expWeights), which an 8-bit rounding to 1/128 follows: e^x for x in [−8, 0] as
 * (M(t))^16 with t = x/(16·scale) and M(t) = t³ + a₂t² + a₁t + 1 the cubic 1 + c₁y + c₂y² + c₃y³ fitted on y in
 * [−0.5, 0] (2.4·10⁻⁵ relative) rewritten in t = y/scale, scale = c₃^(−1/3), so that its leading coefficient is 1:
 * Horner then takes 3 sums and 2 products. The 1/(16·scale) rides on the caller's own scaling of q (not exact, one
 * correctly rounded product). Relative error 3.9·10⁻⁴ before roundings (5 % of the weights' rounding step).
 */
export const EXP_WEIGHTS = {
  squarings: 4,
  floor: -8,
  scale: 1.9700411927166304,
  monic: [1.9005883932113647, 1.9683165550231934, 1], // a₂, a₁, a₀
};
/** What the caller multiplies x by to give expWeights its t: 1/(2^squarings·scale). */
export const EXP_WEIGHTS_PRESCALE = 2 ** -EXP_WEIGHTS.squarings / EXP_WEIGHTS.scale;
/** expWeights' floor, −8, in its units t (a float32 constant: the clip, and the two-limb path's exact zeros). */
export const EXP_WEIGHTS_FLOOR = Math.fround(EXP_WEIGHTS.floor * EXP_WEIGHTS_PRESCALE);

/**
 * e^x for t = x·EXP_WEIGHTS_PRESCALE, x ≤ 0, without a selection over the tensor (a Where costs about four products
 * here, onnxruntime's being slow): t is clipped below at the floor's t, so the result is e^x for x in [−8, 0] and
 * e^−8·(1 ± 4·10⁻⁴) ≈ 3.4·10⁻⁴ below it — not 0: the caller's rounding to 1/128 makes it 0 (quantizeUnitRows), or a
 * Where does. Clip's NaN is a kernel's choice (kept or replaced by the floor): the caller catches NaN in t before the
 * clip (quantizeUnitRows' nanOf; portableOps.ts CLIP).
 */
export function expWeights(g: GraphBuilder, t: string): string {
  const [a2, a1, a0] = EXP_WEIGHTS.monic;
  const y = g.op("Clip", [t, f32(g, EXP_WEIGHTS_FLOOR)]);
  let e = g.op("Add", [g.op("Mul", [g.op("Add", [y, f32(g, a2)]), y]), f32(g, a1)]);
  e = g.op("Add", [g.op("Mul", [e, y]), f32(g, a0)]);
  for (let i = 0; i < EXP_WEIGHTS.squarings; i++) e = g.op("Mul", [e, e]);
  return e;
}

/** e^x for x in [floor, 0] (see EXP_LOSS); 0 below floor; NaN stays NaN. */
export function expSquared(g: GraphBuilder, x: string, range = EXP_LOSS): string {
  const y = g.op("Mul", [x, f32(g, 2 ** -range.squarings)]);
  let e = horner(g, y, [...range.coeffs].reverse());
  for (let i = 0; i < range.squarings; i++) e = g.op("Mul", [e, e]);
  return g.op("Where", [g.op("Less", [x, f32(g, range.floor)]), f32(g, 0), e]);
}

/**
 * z − (max(z) + SHIFT_MARGIN) along `axis` (kept): ReduceMax as a softmax shift (portableOps.ts SHIFT), so the
 * result is ≤ −SHIFT_MARGIN and a row's largest exp is e^−0.01 ≈ 0.99005, below 127/128: an 8-bit block of such
 * weights gets the scale 1/128 (127 levels), not 1/64 (the margin, 2·10⁻³, exceeds expSquared's error). For row
 * maxima of 2^16 and more the margin is lost to rounding and the largest weight nears 1 (level 128 from 2^18):
 * quantizeUnitRows, which the transformer uses, holds it either way (128 fits its zero point 127).
 */
export const SHIFT_MARGIN = 0.01;
export function softmaxShift(g: GraphBuilder, z: string, axis: number, rank = 0, margin = SHIFT_MARGIN): string {
  const top = g.op("ReduceMax", [z], [attrInts("axes", [axis]), attrInt("keepdims", 1)]);
  return g.op("Sub", [z, g.op("Add", [top, scalarOfRank(g, margin, rank)])]);
}

/**
 * ln s for s in [1, 2^maxExp]: s = 2^e·m with m in [√½, √2) (e counted by comparisons, 2^−e an exact
 * product), ln m = 2·atanh(z), z = (m−1)·reciprocal(m+1), |z| ≤ 0.172, by its odd series to z⁹. `rank`: s's rank, for
 * constants of that rank (scalarOfRank; 0: scalars), the same values.
 */
export function logFromOne(g: GraphBuilder, s: string, maxExp: number, rank = 0): string {
  const c = (v: number) => scalarOfRank(g, v, rank);
  let e = "";
  let half = ""; // 2^−e, a product of exact halvings (no Div: a GPU divides its own way)
  for (let j = 0; j < maxExp; j++) {
    const set = g.op("GreaterOrEqual", [s, c(Math.SQRT2 * 2 ** j)]);
    const one = g.op("Where", [set, c(1), c(0)]);
    const halving = g.op("Where", [set, c(0.5), c(1)]);
    e = e ? g.op("Add", [e, one]) : one;
    half = half ? g.op("Mul", [half, halving]) : halving;
  }
  const m = maxExp > 0 ? g.op("Mul", [s, half]) : s;
  const z = g.op("Mul", [g.op("Sub", [m, c(1)]), reciprocal(g, g.op("Add", [m, c(1)]), rank, [0, 2])]);
  const series = g.op("Mul", [z, horner(g, g.op("Mul", [z, z]), [2 / 9, 2 / 7, 2 / 5, 2 / 3, 2], rank)]);
  return maxExp > 0 ? g.op("Add", [g.op("Mul", [e, c(Math.LN2)]), series]) : series;
}

/**
 * Shifted logits t = z − (max(z) + SHIFT_MARGIN) (softmaxShift: one ReduceMax), their exps and Σ exp (kept, length 1),
 * along the last axis (length C) of z. Σ is in [e^−0.01, C]: the max's own term is e^−0.01 (SOFTMAX_SUM_MIN).
 */
export function softmaxParts(g: GraphBuilder, z: string, rank: number, C: number) {
  if (C < 1) throw new RangeError(`a softmax over ${C} classes`);
  const shifted = softmaxShift(g, z, rank - 1, rank);
  const exps = expSquared(g, shifted);
  return { shifted, exps, sum: sumAxis(g, exps, C, rank - 1) };
}

/** A softmax's Σ is at least this (softmaxParts: the max's term e^−SHIFT_MARGIN, EXP_LOSS within 3·10⁻⁵). */
export const SOFTMAX_SUM_MIN = 0.99;

/** softmaxParts and the log of the sum. */
export function logSumExp(
  g: GraphBuilder,
  z: string,
  rank: number,
  C: number,
): { shifted: string; exps: string; sum: string; lse: string } {
  const parts = softmaxParts(g, z, rank, C);
  return { ...parts, lse: logFromOne(g, parts.sum, Math.ceil(Math.log2(C))) };
}

/**
 * x = m/s exactly, m in [1, base), for x in [base^lo, base^hi): the exponent range halved per level (down by
 * base^2^j while above, then up while below), each level scaling by an exact power of two. Comparisons, Where and
 * products by powers of two: the same bits on every device (no Div, no Sqrt: a GPU rounds those its own way,
 * docs/WORKLOADS.md "The GPU path on an H200"). Only the levels the range needs are built. For base 4, s is the
 * matching power of 2 (1/√x = s/√m).
 */
function normalise(g: GraphBuilder, x: string, base: 2 | 4, rank: number, [lo, hi]: Range): { m: string; s?: string } {
  const c = (v: number) => scalarOfRank(g, v, rank);
  let m = x;
  let s: string | undefined;
  const scale = (cond: string, by: number) => {
    m = g.op("Where", [cond, g.op("Mul", [m, c(by)]), m]);
    const step = g.op("Where", [cond, c(base === 2 ? by : Math.sqrt(by)), c(1)]);
    s = s ? g.op("Mul", [s, step]) : step;
  };
  for (const k of levels(hi - 1)) scale(g.op("GreaterOrEqual", [m, c(base ** k)]), base ** -k);
  for (const k of levels(-lo)) scale(g.op("Less", [m, c(base ** (1 - k))]), base ** k);
  return { m, s };
}

/** x in [base^lo, base^hi), lo ≤ 0 < hi, whole numbers. */
export type Range = [lo: number, hi: number];

/** Powers of two, largest first, that sum to at least n (none for n ≤ 0): the levels covering n exponent steps. */
function levels(n: number): number[] {
  const out: number[] = [];
  for (let k = 1; n > 0 && k <= n; k *= 2) out.unshift(k);
  return out;
}

/**
 * 1/x for x in [2^lo, 2^hi) (default [2^−31, 2^32)) without Div: x normalised to m in [1, 2), the seed 24/17 − 8/17·m (relative error
 * ≤ 1/17), three Newton steps y·(2 − m·y) (error (1/17)^8 < 2^−32 before rounding), scaled back exactly. Within
 * 2 ulp of 1/x (test/workloads/exactDivision.ts), and every node an exact +, −, ×, comparison or Where. NaN stays
 * NaN; outside the range (0, ∞, negatives, beyond 2^hi) the result is wrong, and finite: callers pass a range their
 * inputs cannot leave (a softmax's Σ is in [1, C] because its largest term is e^0 or e^−0.01).
 */
export function reciprocal(g: GraphBuilder, x: string, rank = 0, range: Range = [-31, 32]): string {
  const c = (v: number) => scalarOfRank(g, v, rank);
  const { m, s } = normalise(g, x, 2, rank, range);
  let y = g.op("Sub", [c(24 / 17), g.op("Mul", [m, c(8 / 17)])]);
  for (let i = 0; i < 3; i++) y = g.op("Mul", [y, g.op("Sub", [c(2), g.op("Mul", [m, y])])]);
  return s ? g.op("Mul", [y, s]) : y;
}

/**
 * 1/x for x in [lo, hi], a short range (a small softmax's Σ in [1, C]), without normalising x: the linear seed
 * α − β·x of least relative error on [lo, hi] (it equioscillates: 1 − x·(α − βx) is ε₀ at both ends and −ε₀ between,
 * for β = 2/(lo·hi + (lo + hi)²/4), α = β·(lo + hi), ε₀ = 1 − β·lo·hi), then Newton steps y·(2 − x·y) until
 * ε₀^(2^k) < 2^−28. For C = 4: 14 nodes where reciprocal's levels take 22; within 2 ulp (test/workloads/exactDivision.ts).
 */
export function reciprocalOn(g: GraphBuilder, x: string, rank: number, lo: number, hi: number): string {
  if (!(lo > 0 && hi / lo <= 64)) throw new RangeError(`reciprocalOn wants 0 < lo, hi ≤ 64·lo; got [${lo}, ${hi}]`);
  const c = (v: number) => scalarOfRank(g, v, rank);
  const beta = 2 / (lo * hi + (lo + hi) ** 2 / 4);
  const eps = 1 - beta * lo * hi;
  let y = g.op("Sub", [c(Math.fround(beta * (lo + hi))), g.op("Mul", [x, c(Math.fround(beta))])]);
  for (let e = eps; e >= 2 ** -28; e *= e) y = g.op("Mul", [y, g.op("Sub", [c(2), g.op("Mul", [x, y])])]);
  return y;
}

/**
 * 1/√x for x in [4^lo, 4^hi) (default [4^−15, 4^32): a layer norm's variance up to 1.8·10¹⁹) without Sqrt or Div: x normalised to m in [1, 4) by powers of 4, a linear seed
 * (relative error ≤ 0.18), four Newton steps y·(3/2 − m/2·y²), scaled back by the matching powers of 2.
 */
export function inverseSqrt(g: GraphBuilder, x: string, rank = 0, range: Range = [-15, 32]): string {
  const c = (v: number) => scalarOfRank(g, v, rank);
  const { m, s } = normalise(g, x, 4, rank, range);
  const half = g.op("Mul", [m, c(0.5)]);
  let y = g.op("Sub", [c(7 / 6), g.op("Mul", [m, c(1 / 6)])]); // the chord through (1, 1) and (4, ½)
  for (let i = 0; i < 4; i++) y = g.op("Mul", [y, g.op("Sub", [c(1.5), g.op("Mul", [half, g.op("Mul", [y, y])])])]);
  return s ? g.op("Mul", [y, s]) : y;
}
