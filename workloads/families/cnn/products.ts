// The products of a CNN graph, in three formulations of one model: exact integer products (the template's own
// graphs), float MatMul over block-rounded operands (the verifiers' escalation rule: the same model on float
// kernels) and onnxruntime's float Conv/ConvTranspose/MatMul kernels (the bench's ordinary float graph). Maps are
// channel-first: [N, C, H, W] in, [N, Cout, H·W] out.
//
// A convolution here is an im2col product: the nine shifted copies of the zero-padded map stacked along the
// channel axis ([N, 9·Cin, H·W], data movement only) times the kernel [9·Cin, Cout]; its input gradient is the
// transposed product spread back over the nine shifts (col2im): each shift padded into place, the nine added in
// a fixed order (elementwise: portable).
import { GraphBuilder, attrInt, attrInts } from "../../onnx/builder.ts";
import {
  blockRoundRows,
  integerSums,
  intMatmul2d,
  intWeightGrad,
  mapLimbs,
  quantizeRows,
  scaleSums,
  scaleSumsBy,
  type Limbs,
} from "../../onnx/integer.ts";
import { i64, like, pad, reshape, transpose, window } from "./ops.ts";
import type { ConvStage } from "./stages.ts";

export type Products = {
  /** a [R, K] · b [K, N] → [R, N] (the dense head). */
  matmul(g: GraphBuilder, a: string, b: string, K: number): string;
  /** Per-atom Σ_s h[a, s, i]·d[a, s, o] → [atoms, I, O] (the dense head's weight gradients). */
  weightGrad(g: GraphBuilder, h: string, d: string, S: number): string;
  /** The 3×3 convolution (padding 1) of map a [N, Cin, H, W] by k [9·Cin, Cout] → [N, Cout, H·W]. */
  conv(g: GraphBuilder, k: string, a: string, s: ConvStage): string;
  /** The gradient of conv with respect to its map: dPre [N, Cout, H·W] → [N, Cin, H, W]. */
  convBack(g: GraphBuilder, k: string, dPre: string, s: ConvStage): string;
  /** Per atom of S samples, the gradient with respect to k: → [atoms, 9·Cin, Cout]. */
  kernelGrad(g: GraphBuilder, a: string, dPre: string, s: ConvStage, S: number): string;
};

const T = transpose;
const perChannel = (g: GraphBuilder, scale: string) => g.op("Unsqueeze", [scale, i64(g, [1])]); // [C] → [C, 1]

/** [N, Cin, H, W] → [N, 9·Cin, H·W], once per map and graph (the forward and the kernel gradient share it). */
function im2col(g: GraphBuilder, a: string, s: ConvStage): string {
  const key = `im2col:${a}`;
  const known = g.shared.get(key);
  if (known) return known;
  const padded = pad(g, a, [0, 0, 1, 1, 0, 0, 1, 1]);
  const shifts: string[] = [];
  for (let dy = 0; dy < 3; dy++) {
    for (let dx = 0; dx < 3; dx++) shifts.push(window(g, padded, [dy, dx], [dy + s.H, dx + s.W], [2, 3]));
  }
  const cols = reshape(g, g.op("Concat", shifts, [attrInt("axis", 1)]), [0, 9 * s.Cin, s.H * s.W]);
  g.shared.set(key, cols);
  return cols;
}

/** The gradient of im2col: [N, 9·Cin, H·W] back to [N, Cin, H, W]. */
function col2im(g: GraphBuilder, cols: string, s: ConvStage): string {
  const parts = reshape(g, cols, [0, 9, s.Cin, s.H, s.W]);
  let sum = "";
  for (let o = 0; o < 9; o++) {
    const [dy, dx] = [Math.floor(o / 3), o % 3];
    const shift = reshape(g, window(g, parts, [o], [o + 1], [1]), [0, s.Cin, s.H, s.W]);
    const placed = pad(g, shift, [0, 0, dy, dx, 0, 0, 2 - dy, 2 - dx]);
    sum = sum ? g.op("Add", [sum, placed]) : placed;
  }
  return window(g, sum, [1, 1], [1 + s.H, 1 + s.W], [2, 3]);
}

/** t [N, n, P] → [atoms, n, S, P]: each atom's samples side by side along the positions. */
const atomMajor = (g: GraphBuilder, t: string, S: number, P: number, n: number) =>
  T(g, reshape(g, t, [-1, S, n, P]), [0, 2, 1, 3]);

/** Per-sample blocks of a [N, …] map: the limbs keep the map's shape, one scale per sample. */
function perSample(g: GraphBuilder, t: string, limbs: Limbs) {
  return mapLimbs(quantizeRows(g, reshape(g, t, [0, -1]), limbs), (u8) => like(g, u8, t));
}

export const integerProducts = (limbs: Limbs): Products => ({
  matmul: (g, a, b, K) => intMatmul2d(g, a, b, K, limbs),
  weightGrad: (g, h, d, S) => intWeightGrad(g, h, d, S, limbs),
  conv(g, k, a, s) {
    const qk = quantizeRows(g, T(g, k, [1, 0]), limbs); // a scale per output channel
    const qc = perSample(g, im2col(g, a, s), limbs);
    const sums = integerSums(g, qk, qc, 9 * s.Cin, 2, 3);
    return g.op("Mul", [scaleSums(g, sums, qc.scale), perChannel(g, qk.scale)]);
  },
  convBack(g, k, dPre, s) {
    const qk = quantizeRows(g, k, limbs); // a scale per row of the patch
    const qd = perSample(g, dPre, limbs);
    const sums = integerSums(g, qk, qd, s.Cout, 2, 3);
    return col2im(g, g.op("Mul", [scaleSums(g, sums, qd.scale), perChannel(g, qk.scale)]), s);
  },
  kernelGrad(g, a, dPre, s, S) {
    const [P, K] = [s.H * s.W, 9 * s.Cin];
    // blocks along the contraction axis (an atom's S·P positions): one per (atom, patch row) of the columns
    // and one per (atom, output channel) of the gradient; output scale = their outer product per atom
    const rowsOf = (t: string, n: number) => reshape(g, atomMajor(g, t, S, P, n), [-1, S * P]); // [A·n, S·P]
    const qc = mapLimbs(quantizeRows(g, rowsOf(im2col(g, a, s), K), limbs), (u8) => reshape(g, u8, [-1, K, S * P]));
    const qd = mapLimbs(quantizeRows(g, rowsOf(dPre, s.Cout), limbs), (u8) =>
      T(g, reshape(g, u8, [-1, s.Cout, S * P]), [0, 2, 1]),
    );
    const sums = integerSums(g, qc, qd, S * P, 3, 3); // [A, K, Cout]
    const scale = g.op("Mul", [reshape(g, qc.scale, [-1, K, 1]), reshape(g, qd.scale, [-1, 1, s.Cout])]);
    return scaleSumsBy(g, sums, scale);
  },
});

/**
 * The same model on float MatMul kernels, each operand first rounded to its block floating point value (with
 * `limbs`; without, the plain float im2col formulation, for tests).
 */
export function blockRoundedFloatProducts(limbs?: Limbs): Products {
  const r = (g: GraphBuilder, t: string) => (limbs ? blockRoundRows(g, t, limbs) : t);
  const rows = (g: GraphBuilder, t: string) => like(g, r(g, reshape(g, t, [0, -1])), t);
  return {
    matmul: (g, a, b) => g.op("MatMul", [r(g, a), T(g, r(g, T(g, b, [1, 0])), [1, 0])]),
    weightGrad: (g, h, d) => g.op("MatMul", [T(g, rows(g, h), [0, 2, 1]), rows(g, d)]),
    conv: (g, k, a, s) => g.op("MatMul", [r(g, T(g, k, [1, 0])), rows(g, im2col(g, a, s))]),
    convBack: (g, k, d, s) => col2im(g, g.op("MatMul", [r(g, k), rows(g, d)]), s),
    kernelGrad: (g, a, d, s, S) => {
      const [P, K] = [s.H * s.W, 9 * s.Cin];
      const rounded = (t: string, n: number) =>
        reshape(g, r(g, reshape(g, atomMajor(g, t, S, P, n), [-1, S * P])), [-1, n, S * P]);
      return g.op("MatMul", [rounded(im2col(g, a, s), K), T(g, rounded(d, s.Cout), [0, 2, 1])]);
    },
  };
}

/**
 * Ordinary float kernels: Conv for the convolution, ConvTranspose for its map gradient, and the kernel gradient as
 * a grouped Conv (one group per atom) of the padded input by the output gradient, batch and channel axes swapped.
 * For the bench only; `atoms` is fixed (the grouped Conv needs it), so calls must carry all of a step's atoms.
 */
export function floatKernelProducts(atoms: number): Products {
  // k [9·Cin, Cout] (rows shift-major, then channel) ↔ Conv weight [Cout, Cin, 3, 3]
  const convWeight = (g: GraphBuilder, k: string, s: ConvStage) =>
    T(g, reshape(g, k, [3, 3, s.Cin, s.Cout]), [3, 2, 0, 1]);
  const pads = attrInts("pads", [1, 1, 1, 1]);
  return {
    matmul: (g, a, b) => g.op("MatMul", [a, b]),
    weightGrad: (g, h, d) => g.op("MatMul", [T(g, h, [0, 2, 1]), d]),
    conv: (g, k, a, s) => reshape(g, g.op("Conv", [a, convWeight(g, k, s)], [pads]), [0, s.Cout, s.H * s.W]),
    convBack: (g, k, d, s) =>
      g.op("ConvTranspose", [reshape(g, d, [0, s.Cout, s.H, s.W]), convWeight(g, k, s)], [pads]),
    kernelGrad(g, a, d, s) {
      // dk[co, ci, ky, kx] = Σ_{n in atom, y, x} a_pad[n, ci, y + ky, x + kx] · d[n, co, y, x]
      const x = T(g, a, [1, 0, 2, 3]); // [Cin, N, H, W]: samples as channels, grouped by atom
      // d [N, Cout, H·W] → weights [A·Cout, S, H, W]
      const weight = reshape(g, T(g, reshape(g, d, [atoms, -1, s.Cout, s.H, s.W]), [0, 2, 1, 3, 4]), [
        atoms * s.Cout,
        -1,
        s.H,
        s.W,
      ]);
      const out = g.op("Conv", [x, weight], [pads, attrInt("group", atoms)]); // [Cin, A·Cout, 3, 3]
      const perAtom = T(g, reshape(g, out, [s.Cin, atoms, s.Cout, 3, 3]), [1, 3, 4, 0, 2]); // [A, 3, 3, Cin, Cout]
      return reshape(g, perAtom, [atoms, 9 * s.Cin, s.Cout]);
    },
  };
}
