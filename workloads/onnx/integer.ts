// Exact integer products. A template's large contractions run on MatMulInteger with uint8 operands
// and zero points 128 (signed values in [−128, 127]): the int32 sums are exact, so the kernel's order,
// blocking and SIMD width cannot change a bit, and u8 × u8 cannot saturate (u8 × s8 can before VNNI).
// Float operands become block floating point: every block (one row's or column's slice along the
// contraction axis) shares a power-of-two scale P with max|x| ≤ 127·P, and each element is stored as
// limbs: hi = round(x/P) in [−127, 127] and, with two limbs, lo = round((x − hi·P)·128/P) in [−64, 64].
// Because P is a power of two, x/P is exact and QuantizeLinear's round-half-to-even is fixed by IEEE 754
// alone. Format, error analysis and measurements: docs/WORKLOADS.md.
import { GraphBuilder, attrInt, attrInts } from "./builder.ts";
import { DT } from "./schema.ts";
import { nanCheck, scalar, sumTimesZero } from "./exact.ts";

/** Limbs per operand: 1 (8-bit block floating point) or 2 (about 15 bits, three integer products' work). */
export type Limbs = 1 | 2;

/**
 * An operand as uint8 limbs (value + 128) and its power-of-two block scales; zp: the zero point of `hi` when it is
 * not 128 (a uint8 scalar; one limb only: quantizeUnitRows).
 */
export type Quantized = { hi: string; lo?: string; scale: string; zp?: string };

/** Zero point of every integer operand: uint8 v stands for v − 128. */
export const ZERO_POINT = 128;
/**
 * Block maxima below 2^−93 are taken as 2^−93, so scales (and scales over 128) stay normal floats: devices
 * that flush subnormals agree. Above about 2^104 the one-bit split overflows: the scale is NaN and the block's
 * products NaN on every device (a value that large means the run has diverged; its state is refused).
 */
const AMAX_MIN = 2 ** -93;
/** Veltkamp's splitter for one significant bit of a float32 (2^(24−1) + 1). */
const ONE_BIT_SPLITTER = 2 ** 23 + 1;
/**
 * 1.5·2^7/127, raised by 2^−20 so that fl(a·it) ≥ 1.5·2^7·a/127 despite its own rounding (blockScale): a float32
 * constant, so every device multiplies by the same value.
 */
const ONE_BIT_TARGET = Math.fround(((1.5 * 2 ** 7) / 127) * (1 + 2 ** -20));
/** Every int32 sum stays exact: Σ hi·hi while K·128² < 2^31, the cross sum Σ (hi·lo + lo·hi) while 2·K·128² < 2^31. */
export const MAX_K_ONE_LIMB = Math.floor((2 ** 31 - 1) / 128 ** 2);
export const MAX_K_TWO_LIMBS = Math.floor(MAX_K_ONE_LIMB / 2);

function shared(g: GraphBuilder, key: string, make: () => string): string {
  let name = g.shared.get(key);
  if (!name) g.shared.set(key, (name = make()));
  return name;
}

const zeroPoint = (g: GraphBuilder) => shared(g, "u8:zp", () => g.constInt([ZERO_POINT], [], DT.UINT8));
const i64 = (g: GraphBuilder, v: number[]) => shared(g, `i64:${v.join(",")}`, () => g.constInt64(v));

/**
 * Per-axis zero points: onnxruntime wants one per scale, so the scale's shape is filled with 128 by quantizing
 * scale·0 (a per-tensor QuantizeLinear: round(0) + 128). Not an Expand of the uint8 scalar: the WebGPU provider's
 * Expand fails on uint8. A poisoned (NaN) scale gets a meaningless zero point: its products are NaN anyway.
 */
const zeroPoints = (g: GraphBuilder, scale: string) =>
  g.op("QuantizeLinear", [g.op("Mul", [scale, scalar(g, 0)]), scalar(g, 1), zeroPoint(g)]);

/**
 * A power of two P with a ≤ 127·P for a = max(amax, AMAX_MIN), per element — the smallest one but within a relative
 * 2^−20 above a = 127·2^k: a·ONE_BIT_TARGET (≈ 1.5·a/127·2^7) rounded to one significant bit (Veltkamp: γ = z·(2^23+1),
 * R = γ + (z − γ), the power of two nearest z: z/1.5 < R ≤ z·4/3), times 2^−7. R ≥ z/1.5 gives 127·P ≥ a; for
 * a/127 in (2^(k−1), 2^k], z/2^7 lies in (1.5·2^(k−1), 1.5·2^k]: R·2^−7 = 2^k, so |x/P| uses (63.5, 127]. Four
 * IEEE operations and the clamp, no selection. The split overflows for a ≥ 2^104.4: R, hence P, is then NaN.
 */
function blockScale(g: GraphBuilder, amax: string, lean = false): string {
  // lean: a = amax + 2^−93 (one node): amax itself from 2^−68 up, and a ≥ amax keeps max|x| ≤ 127·P
  const a = lean
    ? g.op("Add", [amax, scalar(g, AMAX_MIN)])
    : g.op("Where", [g.op("Less", [amax, scalar(g, AMAX_MIN)]), scalar(g, AMAX_MIN), amax]);
  const z = g.op("Mul", [a, scalar(g, ONE_BIT_TARGET)]);
  const gamma = g.op("Mul", [z, scalar(g, ONE_BIT_SPLITTER)]);
  return g.op("Mul", [g.op("Add", [gamma, g.op("Sub", [z, gamma])]), scalar(g, 2 ** -7)]);
}

/**
 * A 2-D tensor t [R, K] quantized in blocks, one per row (the contraction axis K is the last), so the scale
 * is 1-D [R] (onnxruntime's per-axis kernels are fast along the outer axis only: per column, transpose first).
 * A block holding ±∞ or NaN gets the scale NaN (its Σ t·0 is NaN whatever the order; a finite block's is 0):
 * its limbs are whatever the device makes of NaN, but every product with them is NaN on every device, so
 * such a step's state is refused everywhere.
 *
 * `lean` (the transformer's and the MLP's products: fewer nodes on the per-block scale vectors, which cost more
 * than their size in a step of hundreds or thousands of nodes):
 * - the poison term is (Σ t)·0, one read of t instead of a Mul pass and a read. It is the same in every case that
 *   matters: a block holding NaN, or ±∞, sums to NaN or ±∞ in any order (finite terms cannot cancel an infinity),
 *   so the term is NaN; a finite block below the split's limit (max|t| < 2^104.4, at most 2^20 elements) cannot
 *   overflow in any order, so its sum is finite and the term ±0 — its sign may follow the order, but it is added to
 *   a positive scale, which it leaves as it is (blocks past the limit have a NaN scale: NaN products anyway);
 * - the block maximum is raised by 2^−93 instead of clamped to it (blockScale);
 * - the zero points (128 per block) are made once per `lean.rows` key, from zeros of the scale's shape rather than
 *   from the scale itself (so a poisoned scale does not reach other blocks' zero points). Every scale with the same
 *   key must have the same length (quantizeLast: the leading dims, whose −1 is the same batch count);
 * - `lean.length` is a block's element count, at most MAX_LEAN_BLOCK (checked: the poison's no-overflow bound);
 * - `lean.amax`, when given, is the rows' max|t| computed by the caller (quantizeLast: from a shared Abs);
 * - `lean.short` (one limb): rows too short for onnxruntime's per-axis QuantizeLinear, which runs row by row (K = 16:
 *   0.79 against 0.47 ms on [16384, 16], microbenchmark), are quantized as quantizeColumns does: t·(1/P) (exact, P a
 *   power of two; the row scale unsqueezed to [R, 1]) rounded by a per-tensor QuantizeLinear with scale 1. The same
 *   limbs wherever the scale is finite; a block whose scale is NaN gets limbs that may differ, but every product with
 *   them is multiplied by that NaN scale.
 */
/** A lean block's poison (Σ t)·0 cannot overflow in any order below the split's limit only for this many elements. */
export const MAX_LEAN_BLOCK = 2 ** 20;
function checkLeanBlock(length: number): void {
  if (!Number.isInteger(length) || length < 1)
    throw new Error(`a lean block needs its length known (got ${length}): its poison sum's bound depends on it`);
  if (length > MAX_LEAN_BLOCK)
    throw new Error(`a lean block of ${length} elements (over ${MAX_LEAN_BLOCK}) could overflow its poison sum`);
}

export function quantizeRows(
  g: GraphBuilder,
  t: string,
  limbs: Limbs,
  lean?: { rows: string; length: number; amax?: string; short?: boolean },
): Quantized {
  if (lean) checkLeanBlock(lean.length);
  const amax = lean?.amax ?? g.op("ReduceMax", [g.op("Abs", [t])], [attrInts("axes", [1]), attrInt("keepdims", 0)]);
  const poison = lean ? sumTimesZero(g, t, 1) : nanCheck(g, t, 1);
  const scale = g.op("Add", [blockScale(g, amax, Boolean(lean)), poison]);
  if (lean?.short && limbs === 1) {
    // short rows: t·(1/P) per row, then one per-tensor QuantizeLinear (as quantizeColumns): the same limbs
    const inverse = g.op("Unsqueeze", [g.op("Div", [scalar(g, 1), scale]), i64(g, [1])]);
    return { hi: g.op("QuantizeLinear", [g.op("Mul", [t, inverse]), scalar(g, 1), zeroPoint(g)]), scale };
  }
  const zp = lean
    ? shared(g, `zp:${lean.rows}`, () => zeroPoints(g, g.op("Expand", [scalar(g, 0), g.op("Shape", [scale])])))
    : zeroPoints(g, scale);
  const hi = g.op("QuantizeLinear", [t, scale, zp], [attrInt("axis", 0)]);
  if (limbs === 1) return { hi, scale };
  const back = g.op("DequantizeLinear", [hi, scale, zp], [attrInt("axis", 0)]);
  const rest = g.op("Sub", [t, back]); // exact, |rest| ≤ P/2
  const lo = g.op("QuantizeLinear", [rest, g.op("Mul", [scale, scalar(g, 1 / 128)]), zp], [attrInt("axis", 0)]);
  return { hi, lo, scale };
}

/**
 * t [R, K] rounded to its block floating point value, as a float tensor (hi·P, plus lo·P/128 with two limbs):
 * what the integer product multiplies, for float-kernel formulations of the same model (the verifiers'
 * escalation rule, the bench). Not portable by itself when it feeds a float MatMul.
 */
export function blockRoundRows(g: GraphBuilder, t: string, limbs: Limbs): string {
  const q = quantizeRows(g, t, limbs);
  const back = (u8: string, scale: string) =>
    g.op("DequantizeLinear", [u8, scale, zeroPoints(g, scale)], [attrInt("axis", 0)]);
  const hi = back(q.hi, q.scale);
  return q.lo ? g.op("Add", [hi, back(q.lo, g.op("Mul", [q.scale, scalar(g, 1 / 128)]))]) : hi;
}

/** Limbs of a quantized operand moved by the same data movement (they are uint8: cheap to move). */
export const mapLimbs = (q: Quantized, f: (u8: string) => string): Quantized => ({
  ...q,
  hi: f(q.hi),
  lo: q.lo && f(q.lo),
});

const mmi = (g: GraphBuilder, a: string, b: string, aZp = zeroPoint(g)) =>
  g.op("MatMulInteger", [a, b, aZp, zeroPoint(g)]);

/**
 * Σ_k a_k·b_k of limbs a [..., M, K] and b [..., K, N] (MatMul broadcasting) in int32, returned as the terms
 * to scale: one limb [Σ hi·hi]; two limbs [Σ hi·hi, Σ (hi·lo + lo·hi)] with the second worth 1/128 of the
 * first (the lo·lo term, below 2^−14 of the largest product, is left out; the cross terms are one product
 * over the concatenated axis). Every sum is exact.
 */
export function integerSums(
  g: GraphBuilder,
  a: Quantized,
  b: Quantized,
  K: number,
  aRank: number,
  bRank: number,
): string[] {
  if (Boolean(a.lo) !== Boolean(b.lo)) throw new Error("both operands need the same number of limbs");
  if ((a.zp && a.lo) || b.zp) throw new Error("only a one-limb left operand may have its own zero point");
  const maxK = a.lo ? MAX_K_TWO_LIMBS : MAX_K_ONE_LIMB;
  if (K > maxK) throw new Error(`contraction length ${K} exceeds ${maxK}: the int32 sum could overflow`);
  const hh = mmi(g, a.hi, b.hi, a.zp);
  if (!a.lo) return [hh];
  const cat = (x: string, y: string, axis: number) => g.op("Concat", [x, y], [attrInt("axis", axis)]);
  return [hh, mmi(g, cat(a.hi, a.lo, aRank - 1), cat(b.lo!, b.hi, bRank - 2))];
}

/**
 * Σ of int32 terms times a scale along axis 0 (1-D, powers of two), the k-th term worth 128^−k: each
 * term dequantized in one pass (a correctly rounded cast times a power of two), then added in order.
 */
export function scaleSums(g: GraphBuilder, sums: string[], scale: string): string {
  const deq = (t: string, s: string) => g.op("DequantizeLinear", [t, s], [attrInt("axis", 0)]);
  let out = deq(sums[0], scale);
  if (sums[1]) out = g.op("Add", [out, deq(sums[1], g.op("Mul", [scale, scalar(g, 1 / 128)]))]);
  return out;
}

/** As scaleSums, with a scale tensor that broadcasts against the sums (a cast, then exact power-of-two products). */
export function scaleSumsBy(g: GraphBuilder, sums: string[], scale: string): string {
  const float = (t: string) => g.op("Cast", [t], [attrInt("to", DT.FLOAT)]);
  let out = g.op("Mul", [float(sums[0]), scale]);
  if (sums[1]) out = g.op("Add", [out, g.op("Mul", [float(sums[1]), g.op("Mul", [scale, scalar(g, 1 / 128)])])]);
  return out;
}

const transpose2d = (g: GraphBuilder, t: string) => g.op("Transpose", [t], [attrInts("perm", [1, 0])]);

/**
 * a [R, K] · b [K, N] → float [R, N]: a quantized per row, b per column (as rows of bᵀ), the exact integer
 * sums scaled by a's row scale in one pass, then by b's column scale (both powers of two: exact). `rows`: keys
 * naming a's R and b's N for quantizeRows' `lean` (scales of the same key are as long: their zero points are one).
 * `bGivenTransposed`: b is passed as bᵀ [N, K] (a backward product by a weight: no transpose there and back).
 */
export function intMatmul2d(
  g: GraphBuilder,
  a: string,
  b: string,
  K: number,
  limbs: Limbs,
  rows?: { a: string; b: string },
  bGivenTransposed = false,
): string {
  const lean = (key?: string) => (key ? { rows: key, length: K } : undefined);
  const qa = quantizeRows(g, a, limbs, lean(rows?.a));
  const bT = bGivenTransposed ? b : transpose2d(g, b);
  const qb = mapLimbs(quantizeRows(g, bT, limbs, lean(rows?.b)), (u8) => transpose2d(g, u8));
  return g.op("Mul", [scaleSums(g, integerSums(g, qa, qb, K, 2, 2), qa.scale), qb.scale]);
}

/**
 * Per-atom Σ_s h[a, s, i]·d[a, s, o] → float [A, I, O] (a weight gradient): h and d each quantized with one
 * block per atom (the atom's rows), so the product's scale is one per atom and the A integer products
 * (one batched call) are dequantized in one pass. `lean`: quantizeRows' lean form (the atoms' row key "atoms"),
 * given h's and d's widths (a block is an atom's S rows of them).
 */
export function intWeightGrad(
  g: GraphBuilder,
  h: string,
  d: string,
  S: number,
  limbs: Limbs,
  lean?: { hWidth: number; dWidth: number },
): string {
  const flat = (t: string) => g.op("Reshape", [t, i64(g, [0, -1])]); // [A, S·n]: one block per atom
  const perAtom = (width: number) => (lean ? { rows: "atoms", length: S * width } : undefined);
  const qh = quantizeRows(g, flat(h), limbs, perAtom(lean?.hWidth ?? 0));
  const qd = quantizeRows(g, flat(d), limbs, perAtom(lean?.dWidth ?? 0));
  const unflat = (u8: string, like: string) => g.op("Reshape", [u8, g.op("Shape", [like])]);
  const hT = mapLimbs(qh, (u8) => g.op("Transpose", [unflat(u8, h)], [attrInts("perm", [0, 2, 1])])); // [A, I, S]
  const dS = mapLimbs(qd, (u8) => unflat(u8, d)); // [A, S, O]
  return scaleSums(g, integerSums(g, hT, dS, S, 3, 3), g.op("Mul", [qh.scale, qd.scale]));
}

/** Rows of at most this length are quantized per tensor (quantizeRows `lean.short`): the attention heads' dh = 16. */
const SHORT_ROW = 16;

/**
 * |t|, one Abs per tensor and graph: a tensor quantized along two axes (rows for one product, columns for another:
 * the attention's dO and dS, q/√dh, the weights) reads the same magnitudes for both block maxima. The maximum of the
 * same values is the same float whichever axis it is taken over (max is exact; |x| has no −0).
 */
const magnitudes = (g: GraphBuilder, t: string) => shared(g, `abs:${t}`, () => g.op("Abs", [t]));

/**
 * t with known dims (the first may be −1) quantized in blocks along its last axis (one block per row of K):
 * limbs of t's shape, scales of t's shape without the last axis. Once per graph, tensor and dims: every product
 * that reads t along its rows gets the same blocks.
 */
export function quantizeLast(g: GraphBuilder, t: string, dims: number[], limbs: Limbs): Quantized {
  const memo = rowBlocksOf(g);
  const key = rowBlocksKey(t, dims, limbs);
  const known = memo.get(key);
  if (known) return known;
  const q = quantizeLastOnce(g, t, dims, limbs);
  memo.set(key, q);
  return q;
}

/** Row quantizations per graph and tensor: a tensor's forward blocks are reused by its backward (intProductFolded). */
const rowBlocks = new WeakMap<GraphBuilder, Map<string, Quantized>>();
const rowBlocksOf = (g: GraphBuilder) => {
  if (!rowBlocks.has(g)) rowBlocks.set(g, new Map());
  return rowBlocks.get(g)!;
};
const rowBlocksKey = (t: string, dims: number[], limbs: Limbs) => `${t}|${dims.join(",")}|${limbs}`;

/**
 * Registers row blocks for the products that read them when every value of t lies in [0, 1] or is NaN — softmax
 * weights e^(z − max − margin): the block scale is 1/128 whatever the row's maximum, and the limbs are
 * round(t·128) + 127 (zero point 127: 0 to 128 fit a uint8 without saturating), one per-tensor QuantizeLinear, exact
 * (t·128 is). No |t| and no row maxima. With the softmax shift's margin (onnx/exact.ts SHIFT_MARGIN) a row's largest
 * weight is below 127/128, so the blocks quantizeRows makes are these same 1/128 blocks, in every row.
 *
 * Returns the weights as the products see them, limbs·1/128 (0 where t < 1/256: expWeights' values below its floor),
 * a float tensor of t's shape under whose name the blocks are registered (products of it reuse them; its own row
 * blocks would be the same). Each row's scale carries a poison, 0 or NaN, from `nanOf` (default t): Σ(nanOf·0) along
 * the row, NaN in any order when the row of nanOf holds a NaN or ±∞ (no overflow: a sum of zeros). expWeights
 * passes its input before the clip, whose NaN a kernel may keep or drop: the row is NaN on every device either way.
 */
export function quantizeUnitRows(g: GraphBuilder, t: string, dims: number[], nanOf = t): string {
  const memo = rowBlocksOf(g);
  const last = dims.length - 1;
  const poison = nanCheck(g, nanOf, last);
  const zp = shared(g, "u8:zp127", () => g.constInt([127], [], DT.UINT8));
  const hi = g.op("QuantizeLinear", [t, scalar(g, 1 / 128), zp]);
  const scale = g.op("Add", [poison, scalar(g, 1 / 128)]);
  // the values: one per-axis DequantizeLinear over the flattened rows, the poisoned scale per row
  const rows = g.op("Reshape", [scale, i64(g, [-1])]);
  const zps = g.op("QuantizeLinear", [g.op("Mul", [rows, scalar(g, 0)]), scalar(g, 1), zp]);
  const flat = g.op("Reshape", [hi, i64(g, [-1, dims[last]])]);
  const values = g.op("Reshape", [
    g.op("DequantizeLinear", [flat, rows, zps], [attrInt("axis", 0)]),
    g.op("Shape", [t]),
  ]);
  const key = rowBlocksKey(values, dims, 1);
  if (memo.has(key)) throw new Error(`${values} is already quantized`);
  memo.set(key, { hi, zp, scale });
  return values;
}

function quantizeLastOnce(g: GraphBuilder, t: string, dims: number[], limbs: Limbs): Quantized {
  const K = dims[dims.length - 1];
  // max|t| per row from t's own |t| (magnitudes: shared with a column quantization of the same tensor), flattened
  const rowMax = g.op("ReduceMax", [magnitudes(g, t)], [attrInts("axes", [dims.length - 1]), attrInt("keepdims", 0)]);
  const amax = dims.length === 2 ? rowMax : g.op("Reshape", [rowMax, i64(g, [-1])]);
  const rows = dims.slice(0, -1).join(",");
  const q = quantizeRows(g, g.op("Reshape", [t, i64(g, [-1, K])]), limbs, {
    rows,
    length: K,
    amax,
    short: K <= SHORT_ROW,
  });
  const back = (u8: string) => g.op("Reshape", [u8, i64(g, dims)]);
  return { ...mapLimbs(q, back), scale: g.op("Reshape", [q.scale, i64(g, dims.slice(0, -1))]) };
}

/**
 * t [..., K, M] quantized in blocks along axis −2 (one block per column, the contraction axis second to last), as
 * quantizeRows with `lean`: the scale is [..., 1, M] and the limbs keep t's layout, so t is never transposed. t·(1/P)
 * is exact (P a power of two and |t/P| ≤ 127), so a per-tensor QuantizeLinear with scale 1 rounds the same value
 * as a per-axis one by P: the same limbs, without moving t (per-axis quantization wants the blocks along the
 * outermost axis; a float transpose costs more than the Mul).
 */
function quantizeColumns(g: GraphBuilder, t: string, dims: number[], limbs: Limbs): Quantized {
  const axis = dims.length - 2;
  checkLeanBlock(dims[axis]); // its poison is the lean (Σ t)·0 over a column
  const amax = g.op("ReduceMax", [magnitudes(g, t)], [attrInts("axes", [axis]), attrInt("keepdims", 1)]);
  const poison = sumTimesZero(g, t, axis, true);
  const scale = g.op("Add", [blockScale(g, amax, true), poison]);
  const inverse = g.op("Div", [scalar(g, 1), scale]);
  const unit = (x: string) => g.op("QuantizeLinear", [x, scalar(g, 1), zeroPoint(g)]);
  const hi = unit(g.op("Mul", [t, inverse]));
  if (limbs === 1) return { hi, scale };
  const back = g.op("Mul", [g.op("DequantizeLinear", [hi, scalar(g, 1), zeroPoint(g)]), scale]);
  const rest = g.op("Sub", [t, back]); // exact, |rest| ≤ P/2
  return { hi, lo: unit(g.op("Mul", [rest, g.op("Mul", [inverse, scalar(g, 128)])])), scale };
}

/**
 * Where each operand's contraction axis is: aKM, a is [..., K, M] (else [..., M, K]); bKN, b is [..., K, N] (else
 * [..., N, K]). aOnes (with aKM, one limb): a as if a column of K ones were appended ([..., K, M + 1]; the output gets
 * row M: the exact int32 sums of b's limbs times b's scales, the bias gradient's product).
 */
export type Layout = { aKM?: boolean; bKN?: boolean; aOnes?: boolean };

const swapLastTwo = (rank: number) => [...Array.from({ length: rank - 2 }, (_, i) => i), rank - 1, rank - 2];

/**
 * The column blocks of a [..., K, M] (quantizeColumns) with a block of K ones appended, without materialising the
 * float [..., K, M + 1]: the ones' block maximum is 1, so its scale is what blockScale makes of 1 — a = 1 + 2^−93 = 1,
 * R = 1, 1 > 127/128, P = 1/64 (the poison Σ1·0 is 0) — and its limbs are QuantizeLinear(1, 1/64) = 64 + 128. Limbs
 * and scales are concatenated along the last axis (uint8 and the small scale vectors, not the float operand).
 */
function withOnesColumn(g: GraphBuilder, a: string, q: Quantized, limbs: Limbs, layout: Layout): Quantized {
  if (limbs !== 1 || !layout.aKM) throw new Error("aOnes needs one limb and a given as [..., K, M]");
  const last = (t: string) => g.op("Shape", [g.op("Slice", [t, i64(g, [0]), i64(g, [1]), i64(g, [-1])])]);
  const ones = g.op("Expand", [scalar(g, 1), last(a)]); // [..., K, 1]
  const hi = g.op("QuantizeLinear", [ones, scalar(g, 1 / 64), zeroPoint(g)]);
  const scale = g.op("Expand", [scalar(g, 1 / 64), last(q.scale)]); // [..., 1, 1]
  const cat = (x: string, y: string) => g.op("Concat", [x, y], [attrInt("axis", -1)]);
  return { hi: cat(q.hi, hi), scale: cat(q.scale, scale) };
}

/**
 * a · b → float [..., M, N], contracting K (MatMul broadcasting over the leading axes; b may be a 2-D weight). Each
 * operand is quantized in blocks along K — rows when K is its last axis, columns (quantizeColumns) when it is the
 * second to last (`layout`) — so every output is an exact int32 sum times the two blocks' power-of-two scales. Only
 * uint8 limbs are transposed into MatMulInteger's [..., M, K] · [..., K, N]. dims: known shapes as given, the first
 * may be −1.
 */
export function intProductRows(
  g: GraphBuilder,
  a: string,
  aDims: number[],
  b: string,
  bDims: number[],
  limbs: Limbs,
  layout: Layout = {},
): string {
  const [ra, rb] = [aDims.length, bDims.length];
  const [K, M] = layout.aKM ? [aDims[ra - 2], aDims[ra - 1]] : [aDims[ra - 1], aDims[ra - 2]];
  const [bK, N] = layout.bKN ? [bDims[rb - 2], bDims[rb - 1]] : [bDims[rb - 1], bDims[rb - 2]];
  if (bK !== K) throw new Error(`contraction lengths differ: ${K} and ${bK}`);
  const transposeLimbs = (q: Quantized, rank: number) =>
    mapLimbs(q, (u8) => g.op("Transpose", [u8], [attrInts("perm", swapLastTwo(rank))]));
  const qa = layout.aOnes
    ? withOnesColumn(g, a, quantizeColumns(g, a, aDims, limbs), limbs, layout)
    : layout.aKM
      ? quantizeColumns(g, a, aDims, limbs)
      : quantizeLast(g, a, aDims, limbs);
  const qb = layout.bKN ? quantizeColumns(g, b, bDims, limbs) : quantizeLast(g, b, bDims, limbs);
  // a [..., M, K] against a 2-D b: one 2-D product over the flattened rows (a batched MatMulInteger with a
  // broadcast b costs more: 1.90 against 1.83 ms for [8, 512, 64]·[64, 256], microbenchmark); exact sums either way
  const flatA = !layout.aKM && rb === 2 && ra > 2;
  const sums = integerSums(
    g,
    layout.aKM ? transposeLimbs(qa, ra) : flatA ? mapLimbs(qa, (u8) => g.op("Reshape", [u8, i64(g, [-1, K])])) : qa,
    layout.bKN ? qb : transposeLimbs(qb, rb),
    K,
    flatA ? 2 : ra,
    rb,
  );
  // a's block scales along the flattened rows in one DequantizeLinear pass, then b's by broadcasting
  const flatRows = (t: string) => g.op("Reshape", [t, i64(g, [-1, N])]);
  const byRow = scaleSums(g, sums.map(flatRows), g.op("Reshape", [qa.scale, i64(g, [-1])]));
  const outDims = [...aDims.slice(0, -2), layout.aOnes ? M + 1 : M, N];
  const sb = layout.bKN ? qb.scale : g.op("Unsqueeze", [qb.scale, i64(g, [-2])]);
  return g.op("Mul", [g.op("Reshape", [byRow, i64(g, outDims)]), sb]);
}

/**
 * (a ⊙ f)ᵀ · b → float [..., M, N] for a [..., K, M], f [..., K, 1] (optional) and b [..., K, N], contracting K,
 * with a in the row blocks its own product along M already quantized it into (quantizeLast, reused: no second
 * quantization of a along K). a = P_k·q[k, m] per row k, so Σ_k a[k, m]·f_k·b[k, n] = Σ_k q[k, m]·(P_k·f_k·b[k, n]):
 * a's row scales (and f) fold into b, whose columns are then quantized along K as usual, and the int32 sums of a's
 * limbs with b's are exact. The backward of an attention product uses it: the T×T operand (exps, dS) is
 * quantized once along its rows, and only the dh-wide operand is scaled and quantized again. A NaN or ∞ in a
 * poisons its row scale, hence b's column scales, hence the products.
 */
export function intProductFolded(
  g: GraphBuilder,
  a: string,
  aDims: number[],
  f: string | undefined,
  b: string,
  bDims: number[],
  limbs: Limbs,
): string {
  const ra = aDims.length;
  if (aDims[ra - 2] !== bDims[bDims.length - 2])
    throw new Error(`contraction lengths differ: ${aDims[ra - 2]} and ${bDims[bDims.length - 2]}`);
  const qa = quantizeLast(g, a, aDims, limbs); // limbs [..., K, M], scale [..., K]
  const rowScale = g.op("Unsqueeze", [qa.scale, i64(g, [-1])]);
  const folded = g.op("Mul", [b, f ? g.op("Mul", [rowScale, f]) : rowScale]);
  const qb = quantizeColumns(g, folded, bDims, limbs); // limbs [..., K, N], scale [..., 1, N]
  const aT = mapLimbs(qa, (u8) => g.op("Transpose", [u8], [attrInts("perm", swapLastTwo(ra))]));
  return scaleSumsBy(g, integerSums(g, aT, qb, aDims[ra - 2], ra, bDims.length), qb.scale);
}
