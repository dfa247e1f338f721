// Exact integer products (workloads/onnx/integer.ts) against an independent reference written here with
// Math.fround: the same bits, the stated error bound, non-finite blocks, and the rule that keeps
// MatMulInteger to u8 × u8 with zero points 128 (or 127: values of magnitude ≤ 128 either way).
import { expect } from "chai";
import { GraphBuilder, attrInt, attrInts } from "../../workloads/onnx/builder.ts";
import {
  intMatmul2d,
  intProductFolded,
  intProductRows,
  intWeightGrad,
  quantizeRows,
  quantizeUnitRows,
  type Layout,
  type Limbs,
} from "../../workloads/onnx/integer.ts";
import { nonPortableOps } from "../../workloads/onnx/portableOps.ts";
import { DT } from "../../workloads/onnx/schema.ts";
import { createSession, f32 } from "../../workloads/runtime.ts";

const f = Math.fround;

/** Round half to even (QuantizeLinear's rounding). */
function roundEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
const saturate = (q: number) => Math.max(-128, Math.min(127, q));

/**
 * The block scale as docs/WORKLOADS.md states it: a = max(amax, 2^−93), z = a·fl(1.5·2^7/127·(1 + 2^−20)), R = z to
 * one bit, P = R·2^−7.
 */
function blockScale(amax: number): number {
  const a = Math.max(2 ** -93, amax);
  const z = f(a * f(((1.5 * 2 ** 7) / 127) * (1 + 2 ** -20)));
  const gamma = f(z * (2 ** 23 + 1));
  return f(f(gamma + f(z - gamma)) * 2 ** -7);
}

/** One block (a row of length K) as signed limbs and its scale. */
function limbsOf(row: Float32Array, limbs: Limbs): { hi: number[]; lo: number[]; P: number } {
  const P = blockScale(row.reduce((m, v) => Math.max(m, Math.abs(v)), 0));
  const hi = Array.from(row, (v) => saturate(roundEven(v / P)));
  const rest = Array.from(row, (v, k) => f(v - f(hi[k] * P)));
  const lo = limbs === 2 ? rest.map((r) => saturate(roundEven(r / f(P / 128)))) : [];
  return { hi, lo, P };
}

/** The N columns of b [K, N], each one block along K. */
const columnLimbs = (b: Float32Array, K: number, N: number, limbs: Limbs) =>
  Array.from({ length: N }, (_, j) =>
    limbsOf(
      Float32Array.from({ length: K }, (_, k) => b[k * N + j]),
      limbs,
    ),
  );

/** a [R, K] · b [K, N] as the graph computes it: exact integer sums, one cast, power-of-two scales. */
function referenceProduct(a: Float32Array, b: Float32Array, R: number, K: number, N: number, limbs: Limbs) {
  const rows = Array.from({ length: R }, (_, i) => limbsOf(a.subarray(i * K, (i + 1) * K), limbs));
  const cols = columnLimbs(b, K, N, limbs);
  const out = new Float32Array(R * N);
  for (let i = 0; i < R; i++) {
    for (let j = 0; j < N; j++) {
      const [x, y] = [rows[i], cols[j]];
      let hh = 0;
      let cross = 0;
      for (let k = 0; k < K; k++) {
        hh += x.hi[k] * y.hi[k];
        if (limbs === 2) cross += x.hi[k] * y.lo[k] + x.lo[k] * y.hi[k];
      }
      let v = f(f(hh) * x.P);
      if (limbs === 2) v = f(v + f(f(cross) * f(x.P / 128)));
      out[i * N + j] = f(v * y.P);
    }
  }
  return { out, rowScale: rows.map((r) => r.P), colScale: cols.map((c) => c.P) };
}

async function runProduct(a: Float32Array, b: Float32Array, R: number, K: number, N: number, limbs: Limbs) {
  const g = new GraphBuilder("product");
  g.output("y", intMatmul2d(g, g.input("a", [R, K]), g.input("b", [K, N]), K, limbs), [R, N]);
  const model = g.encode();
  expect(nonPortableOps(model)).to.deep.equal([]);
  const s = await createSession(model, "cpu");
  try {
    return (await s.run({ a: f32(a, [R, K]), b: f32(b, [K, N]) })).y.data as Float32Array;
  } finally {
    await s.release();
  }
}

/** Deterministic test data: rows of very different magnitudes (each block gets its own scale). */
function matrix(rows: number, cols: number, seed: number, spread = 1): Float32Array {
  let x = seed;
  const next = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
  return Float32Array.from({ length: rows * cols }, (_, i) => f(next() * 2 ** (Math.floor(i / cols) % 7) * spread));
}

const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe("workloads: exact integer products", function () {
  for (const limbs of [1, 2] as const) {
    it(`${limbs} limb(s): the graph's product equals the written-down arithmetic bit for bit`, async function () {
      const [R, K, N] = [13, 97, 11];
      const a = matrix(R, K, 7);
      const b = matrix(K, N, 9, 1e-3);
      const got = await runProduct(a, b, R, K, N, limbs);
      expect(bits(got)).to.deep.equal(bits(referenceProduct(a, b, R, K, N, limbs).out));
    });

    it(`${limbs} limb(s): the error stays within the stated bound`, async function () {
      const [R, K, N] = [8, 784, 16];
      const a = matrix(R, K, 3);
      const b = matrix(K, N, 5, 0.05);
      const got = await runProduct(a, b, R, K, N, limbs);
      const { rowScale, colScale } = referenceProduct(a, b, R, K, N, limbs);
      // each operand is off by at most half a unit of its last limb: P/2 (one limb) or P/256 (two);
      // two limbs also drop lo·lo (≤ 64·64 units of P·Q/128²) and round the cast (2^−24 relative)
      const unit = limbs === 1 ? 0.5 : 1 / 256;
      for (let i = 0; i < R; i++) {
        for (let j = 0; j < N; j++) {
          let exact = 0;
          let absA = 0;
          let absB = 0;
          for (let k = 0; k < K; k++) {
            exact += a[i * K + k] * b[k * N + j];
            absA += Math.abs(a[i * K + k]);
            absB += Math.abs(b[k * N + j]);
          }
          const [P, Q] = [rowScale[i], colScale[j]];
          const maxB = 127 * Q;
          const maxA = 127 * P;
          let bound = unit * (P * Math.min(K * maxB, absB + K * unit * Q) + Q * absA);
          if (limbs === 2) bound += (K * 64 * 64 * P * Q) / 128 ** 2;
          bound += 2 ** -23 * (K * maxA * maxB);
          expect(Math.abs(got[i * N + j] - exact), `[${i},${j}]`).to.be.at.most(bound);
        }
      }
    });
  }

  // K = 16: rows that short are quantized per tensor after a per-row t·(1/P) (quantizeRows lean.short, one limb)
  for (const [limbs, K] of [
    [1, 97],
    [2, 97],
    [1, 16],
    [2, 16],
  ] as const) {
    it(`${limbs} limb(s), K = ${K}: intProductRows (the transformer's) has the reference's bits with either operand transposed`, async function () {
      // blocks along K are rows of a [R, K] or columns of a given as [K, R] (quantizeColumns): the same blocks, limbs
      // and scales, so the same bits; likewise b as [K, N] or [N, K]
      const [R, N] = [13, 11];
      const a = matrix(R, K, 7);
      const b = matrix(K, N, 9, 1e-3);
      const want = bits(referenceProduct(a, b, R, K, N, limbs).out);
      const transposed = (t: Float32Array, rows: number, cols: number) =>
        Float32Array.from({ length: rows * cols }, (_, i) => t[(i % rows) * cols + Math.floor(i / rows)]);
      const layouts: Layout[] = [{}, { aKM: true }, { bKN: true }, { aKM: true, bKN: true }];
      for (const layout of layouts) {
        const [aDims, bDims] = [layout.aKM ? [K, R] : [R, K], layout.bKN ? [K, N] : [N, K]];
        const g = new GraphBuilder("rows");
        const y = intProductRows(g, g.input("a", aDims), aDims, g.input("b", bDims), bDims, limbs, layout);
        g.output("y", y, [R, N]);
        const model = g.encode();
        expect(nonPortableOps(model)).to.deep.equal([]);
        const s = await createSession(model, "cpu");
        const feeds = {
          a: f32(layout.aKM ? transposed(a, R, K) : a, aDims),
          b: f32(layout.bKN ? b : transposed(b, K, N), bDims),
        };
        const got = (await s.run(feeds)).y.data as Float32Array;
        await s.release();
        expect(bits(got), JSON.stringify(layout)).to.deep.equal(want);
      }
    });
  }

  it("two limbs are about 2^8 times closer to the float64 product than one", async function () {
    const [R, K, N] = [16, 256, 16];
    const a = matrix(R, K, 11);
    const b = matrix(K, N, 13, 0.1);
    const err = async (limbs: Limbs) => {
      const got = await runProduct(a, b, R, K, N, limbs);
      let worst = 0;
      for (let i = 0; i < R; i++) {
        for (let j = 0; j < N; j++) {
          let exact = 0;
          let scale = 0;
          for (let k = 0; k < K; k++) {
            exact += a[i * K + k] * b[k * N + j];
            scale += Math.abs(a[i * K + k] * b[k * N + j]);
          }
          worst = Math.max(worst, Math.abs(got[i * N + j] - exact) / scale);
        }
      }
      return worst;
    };
    const [one, two] = [await err(1), await err(2)];
    expect(one).to.be.below(2 ** -6);
    expect(two).to.be.below(one / 2 ** 6);
  });

  it("a block holding ∞ or NaN makes exactly its own outputs NaN; the rest are unchanged", async function () {
    const [R, K, N] = [4, 32, 3];
    const a = matrix(R, K, 17);
    const b = matrix(K, N, 19);
    const clean = await runProduct(a, b, R, K, N, 1);
    const poisoned = a.slice();
    poisoned[1 * K + 5] = Infinity;
    poisoned[3 * K + 0] = NaN;
    const got = await runProduct(poisoned, b, R, K, N, 1);
    for (let i = 0; i < R; i++) {
      for (let j = 0; j < N; j++) {
        const v = got[i * N + j];
        if (i === 1 || i === 3) expect(v, `[${i},${j}]`).to.be.NaN;
        else expect(v, `[${i},${j}]`).to.equal(clean[i * N + j]);
      }
    }
  });

  for (const K of [32, 16]) {
    it(`intProductRows (lean scales, blocks as rows or as columns, K = ${K}): a block holding ∞ or NaN makes exactly its outputs NaN`, async function () {
      const [R, N] = [4, 3];
      const a = matrix(R, K, 17);
      const b = matrix(K, N, 19);
      const poisoned = a.slice();
      poisoned[1 * K + 5] = Infinity;
      poisoned[3 * K + 0] = NaN;
      const bPoisoned = b.slice();
      bPoisoned[7 * N + 2] = -Infinity; // column 2
      const transposed = (t: Float32Array, rows: number, cols: number) =>
        Float32Array.from({ length: rows * cols }, (_, i) => t[(i % rows) * cols + Math.floor(i / rows)]);
      for (const aKM of [false, true]) {
        const run = async (x: Float32Array, y: Float32Array) => {
          const aDims = aKM ? [K, R] : [R, K];
          const g = new GraphBuilder("rows");
          g.output(
            "y",
            intProductRows(g, g.input("a", aDims), aDims, g.input("b", [K, N]), [K, N], 1, { aKM, bKN: true }),
          );
          const s = await createSession(g.encode(), "cpu");
          const got = (await s.run({ a: f32(aKM ? transposed(x, R, K) : x, aDims), b: f32(y, [K, N]) })).y.data;
          await s.release();
          return got as Float32Array;
        };
        const clean = await run(a, b);
        const got = await run(poisoned, bPoisoned);
        for (let i = 0; i < R; i++) {
          for (let j = 0; j < N; j++) {
            const v = got[i * N + j];
            if (i === 1 || i === 3 || j === 2) expect(v, `aKM ${aKM} [${i},${j}]`).to.be.NaN;
            else expect(v, `aKM ${aKM} [${i},${j}]`).to.equal(clean[i * N + j]);
          }
        }
      }
    });
  }

  it("a block of 1e30 is still quantized as written down; beyond about 2^105 its outputs are NaN on every device", async function () {
    const [R, K, N] = [2, 8, 2];
    const a = matrix(R, K, 23);
    a[3] = 1e30;
    const b = matrix(K, N, 29);
    const got = await runProduct(a, b, R, K, N, 1);
    expect(bits(got)).to.deep.equal(bits(referenceProduct(a, b, R, K, N, 1).out));
    expect(Array.from(got).every(Number.isFinite)).to.equal(true);
    a[3] = 1e32;
    const huge = await runProduct(a, b, R, K, N, 1);
    expect([huge[0], huge[1]]).to.satisfy((v: number[]) => v.every(Number.isNaN));
    expect([huge[2], huge[3]]).to.deep.equal([got[2], got[3]]);
  });

  it("per-atom weight gradients: one integer product per atom, each atom's result independent of the others", async function () {
    const [A, S, I, O] = [3, 8, 20, 6];
    const h = matrix(A * S, I, 31);
    const d = matrix(A * S, O, 37, 1e-2);
    const run = async (atoms: number, hs: Float32Array, ds: Float32Array) => {
      const g = new GraphBuilder("wgrad");
      const out = intWeightGrad(g, g.input("h", ["atoms", S, I]), g.input("d", ["atoms", S, O]), S, 1);
      g.output("y", out, ["atoms", I, O]);
      const model = g.encode();
      expect(nonPortableOps(model)).to.deep.equal([]);
      const s = await createSession(model, "cpu");
      const y = (await s.run({ h: f32(hs, [atoms, S, I]), d: f32(ds, [atoms, S, O]) })).y.data as Float32Array;
      await s.release();
      return y;
    };
    const all = await run(A, h, d);
    const second = await run(1, h.slice(S * I, 2 * S * I), d.slice(S * O, 2 * S * O));
    expect(bits(all.slice(I * O, 2 * I * O))).to.deep.equal(bits(second));
    // and it is the atom's hᵀ·d with one block per atom: compare with the reference on that layout
    const hT = Float32Array.from({ length: I * S }, (_, n) => h[S * I + (n % S) * I + Math.floor(n / S)]);
    const ref = referenceWeightGrad(hT, d.slice(S * O, 2 * S * O), I, S, O);
    expect(bits(second)).to.deep.equal(bits(ref));
  });

  for (const [limbs, M] of [
    [1, 40],
    [1, 16],
    [2, 40],
  ] as const) {
    it(`${limbs} limb(s), M = ${M}: intProductFolded reuses a's row blocks and folds their scales into b, as written down`, async function () {
      // (a ⊙ f)ᵀ·b for a [K, M]: a's rows quantized along M (as its own forward product does), b' = b ⊙ (P_k·f_k)
      // quantized in columns along K, exact int32 sums times b's column scale
      const [K, N] = [24, 5];
      const a = matrix(K, M, 41);
      const b = matrix(K, N, 43, 1e-2);
      const fk = Float32Array.from({ length: K }, (_, k) => f(1 / (1 + k / 3)));
      for (const withF of [false, true]) {
        const rows = Array.from({ length: K }, (_, k) => limbsOf(a.subarray(k * M, (k + 1) * M), limbs));
        const folded = Float32Array.from(b, (v, i) => {
          const k = Math.floor(i / N);
          return f(v * (withF ? f(rows[k].P * fk[k]) : rows[k].P));
        });
        const cols = columnLimbs(folded, K, N, limbs);
        const want = new Float32Array(M * N);
        for (let m = 0; m < M; m++) {
          for (let n = 0; n < N; n++) {
            let [hh, cross] = [0, 0];
            for (let k = 0; k < K; k++) {
              hh += rows[k].hi[m] * cols[n].hi[k];
              if (limbs === 2) cross += rows[k].hi[m] * cols[n].lo[k] + rows[k].lo[m] * cols[n].hi[k];
            }
            let v = f(f(hh) * cols[n].P);
            if (limbs === 2) v = f(v + f(f(cross) * f(cols[n].P / 128)));
            want[m * N + n] = v;
          }
        }
        const g = new GraphBuilder("folded");
        const fIn = withF ? g.input("f", [K, 1]) : undefined;
        g.output("y", intProductFolded(g, g.input("a", [K, M]), [K, M], fIn, g.input("b", [K, N]), [K, N], limbs), [
          M,
          N,
        ]);
        const model = g.encode();
        expect(nonPortableOps(model)).to.deep.equal([]);
        const s = await createSession(model, "cpu");
        const feeds = { a: f32(a, [K, M]), b: f32(b, [K, N]), ...(withF ? { f: f32(fk, [K, 1]) } : {}) };
        const got = (await s.run(feeds)).y.data as Float32Array;
        await s.release();
        expect(bits(got), `f: ${withF}`).to.deep.equal(bits(want));
      }
    });
  }

  it("a NaN in a folded operand's row makes every output of intProductFolded NaN (every output sums over all rows)", async function () {
    const [K, M, N] = [8, 20, 3];
    const g = new GraphBuilder("folded-nan");
    g.output("y", intProductFolded(g, g.input("a", [K, M]), [K, M], undefined, g.input("b", [K, N]), [K, N], 1));
    const s = await createSession(g.encode(), "cpu");
    const a = matrix(K, M, 47);
    a[5 * M + 3] = NaN;
    const got = (await s.run({ a: f32(a, [K, M]), b: f32(matrix(K, N, 53), [K, N]) })).y.data as Float32Array;
    await s.release();
    expect(Array.from(got).every(Number.isNaN)).to.equal(true);
  });

  it("quantizeUnitRows: weights in [0, 1] give quantizeRows' bits (a row of ones too, unsaturated); a NaN poisons its row", async function () {
    // softmax weights after the shift's margin: each row's largest is e^−0.01, so quantizeRows' scale is 1/128 too
    const [R, K, N] = [6, 64, 5];
    const unit = Float32Array.from({ length: R * K }, (_, i) => f((((i * 7919) % 1000) / 1000) * 0.98));
    for (let r = 0; r < R; r++) unit[r * K + ((r * 5) % K)] = f(Math.exp(-0.01));
    const b = matrix(K, N, 59, 1e-2);
    const run = async (a: Float32Array, registered: boolean) => {
      const g = new GraphBuilder("unit");
      const x = g.input("a", [R, K]);
      if (registered) quantizeUnitRows(g, x, [R, K]);
      g.output("y", intProductRows(g, x, [R, K], g.input("b", [K, N]), [K, N], 1, { bKN: true }), [R, N]);
      const model = g.encode();
      expect(nonPortableOps(model)).to.deep.equal([]);
      const s = await createSession(model, "cpu");
      const y = (await s.run({ a: f32(a, [R, K]), b: f32(b, [K, N]) })).y.data as Float32Array;
      await s.release();
      return y;
    };
    const clean = await run(unit, true);
    expect(bits(clean)).to.deep.equal(bits(await run(unit, false)));
    expect(bits(clean)).to.deep.equal(bits(referenceProduct(unit, b, R, K, N, 1).out));
    // a row of ones (the shift gave 0: a maximum past 2^17): 128 steps of 1/128 with zero point 127, no saturation
    const ones = unit.slice();
    ones.fill(1, 2 * K, 3 * K);
    expect(bits(await run(ones, true))).to.deep.equal(bits(referenceProduct(ones, b, R, K, N, 1).out));
    const poisoned = unit.slice();
    poisoned[4 * K + 9] = NaN;
    const got = await run(poisoned, true);
    for (let i = 0; i < R; i++)
      for (let j = 0; j < N; j++)
        if (i === 4) expect(got[i * N + j], `[${i},${j}]`).to.be.NaN;
        else expect(got[i * N + j], `[${i},${j}]`).to.equal(clean[i * N + j]);
  });

  describe("the integer rule", function () {
    const u8Input = (g: GraphBuilder, name: string, dims: number[]) => g.input(name, dims, DT.UINT8);
    const zp = (g: GraphBuilder, v: number) => g.constInt([v], [], DT.UINT8);

    it("refuses MatMulInteger on operands that are not QuantizeLinear limbs (e.g. an int8 input: u8 × s8)", function () {
      const g = new GraphBuilder("s8");
      const a = u8Input(g, "a", [2, 2]);
      const b = g.input("b", [2, 2], 3); // INT8
      g.output("y", g.op("MatMulInteger", [a, b, zp(g, 128), g.constInt([0], [], 3)]), [2, 2], DT.INT32);
      expect(nonPortableOps(g.encode())).to.include.members([
        "MatMulInteger on an operand that is not QuantizeLinear limbs",
        "MatMulInteger without uint8 zero points 128 (or 127)",
      ]);
    });

    it("refuses zero points other than 128, Cast to integer types, ReduceMax and ReduceSum outside their patterns", function () {
      const g = new GraphBuilder("bad");
      const x = g.input("x", [2, 2]);
      const s = g.input("s", [2]);
      const q = g.op("QuantizeLinear", [x, s, g.op("Expand", [zp(g, 0), g.op("Shape", [s])])], [attrInt("axis", 0)]);
      g.output("q", q, [2, 2], DT.UINT8);
      g.output("c", g.op("Cast", [x], [attrInt("to", DT.INT32)]), [2, 2], DT.INT32);
      g.output("m", g.op("ReduceMax", [x], [attrInt("keepdims", 0)]), []);
      g.output("r", g.op("ReduceSum", [x], [attrInt("keepdims", 0)]), []);
      expect(nonPortableOps(g.encode())).to.deep.equal([
        "Cast to type 6 (only float, or int64 of a Floor)",
        "QuantizeLinear without uint8 zero point 128 or 127 (or of an int32 sum)",
        "ReduceMax of something other than Abs or a softmax shift",
        "ReduceSum of something other than x·0, or not itself taken times 0 into a sum",
      ]);
    });

    it("admits Clip(x, constant) of an x checked for NaN by Σ(x·0), and nothing near it", function () {
      const rule = (build: (g: GraphBuilder, x: string, y: string) => string) => {
        const g = new GraphBuilder("clip");
        const [x, y] = [g.input("x", [2, 3]), g.input("y", [2, 3])];
        g.output("out", build(g, x, y), [2, 3]);
        return nonPortableOps(g.encode());
      };
      const c = (g: GraphBuilder, v: number) => g.constFloat([v], []);
      const check = (g: GraphBuilder, t: string) =>
        g.op("ReduceSum", [g.op("Mul", [t, c(g, 0)]), g.constInt64([1])], [attrInt("keepdims", 1)]);
      const poisoned = (g: GraphBuilder, clipped: string, checked: string) => g.op("Add", [clipped, check(g, checked)]);
      expect(rule((g, x) => poisoned(g, g.op("Clip", [x, c(g, -8)]), x))).to.deep.equal([]);
      const refused = [
        "Clip other than Clip(x, finite nonzero constant) of an x whose NaN check Σ(x·0) meets its output",
      ];
      expect(
        rule((g, x) => g.op("Clip", [x, c(g, -8)])),
        "no NaN check",
      ).to.deep.equal(refused);
      // a zero bound ties with ±0 (x86 returns the first operand, ARM's FMAX +0); a NaN bound is kept or ignored
      for (const lo of [0, -0, NaN, -Infinity])
        expect(
          rule((g, x) => poisoned(g, g.op("Clip", [x, c(g, lo)]), x)),
          `a bound of ${Object.is(lo, -0) ? "-0" : lo}`,
        ).to.deep.equal(refused);
      expect(
        rule((g, x) => {
          check(g, x); // a check that goes nowhere
          return g.op("Clip", [x, c(g, -3)]);
        }),
        "a check that the clipped values never meet",
      ).to.deep.equal(refused);
      expect(
        rule((g, x, y) => {
          g.op("Add", [g.op("Clip", [x, c(g, -3)]), y]); // the clipped values go one way
          return g.op("Add", [y, check(g, x)]); // the check another
        }),
        "a check added into something else",
      ).to.deep.equal(refused);
      expect(
        rule((g, x, y) => poisoned(g, g.op("Clip", [x, c(g, -8)]), y)),
        "the check of another tensor",
      ).to.deep.equal(refused);
      expect(
        rule((g, x) => poisoned(g, g.op("Clip", [x, c(g, -8), c(g, 8)]), x)),
        "an upper bound too",
      ).to.deep.equal(refused);
      expect(
        rule((g, x, y) => poisoned(g, g.op("Clip", [x, g.op("ReduceMax", [g.op("Abs", [y])], [])]), x)),
        "a bound that is not a constant",
      ).to.deep.equal(refused);
      const sumTimesZero = (g: GraphBuilder, x: string) =>
        g.op("Mul", [g.op("ReduceSum", [x, g.constInt64([1])], [attrInt("keepdims", 1)]), c(g, 0)]);
      expect(
        rule((g, x) => g.op("Add", [g.op("Clip", [x, c(g, -8)]), sumTimesZero(g, x)])),
        "(Σ x)·0, which a large finite row could overflow in some orders",
      ).to.deep.equal(refused);
    });

    it("admits ReduceMax as a softmax shift x − (max + c) and (Σ x)·0 added to a scale, and nothing near them", function () {
      const rule = (build: (g: GraphBuilder, x: string) => string) => {
        const g = new GraphBuilder("rule");
        const x = g.input("x", [2, 3]);
        g.output("y", build(g, x), [2, 3]);
        return nonPortableOps(g.encode());
      };
      const max = (g: GraphBuilder, t: string) =>
        g.op("ReduceMax", [t], [attrInts("axes", [1]), attrInt("keepdims", 1)]);
      const c = (g: GraphBuilder, v: number) => g.constFloat([v], []);
      const shift = (g: GraphBuilder, x: string, v = 0.01) => g.op("Sub", [x, g.op("Add", [max(g, x), c(g, v)])]);
      expect(rule((g, x) => shift(g, x))).to.deep.equal([]);
      const refused = ["ReduceMax of something other than Abs or a softmax shift"];
      expect(
        rule((g, x) => shift(g, x, 0)),
        "c = 0 (±0 would show)",
      ).to.deep.equal(refused);
      expect(
        rule((g, x) => g.op("Sub", [x, max(g, x)])),
        "no constant",
      ).to.deep.equal(refused);
      expect(
        rule((g, x) => g.op("Sub", [g.op("Neg", [x]), g.op("Add", [max(g, x), c(g, 1)])])),
        "another x",
      ).to.deep.equal(refused);
      expect(
        rule((g, x) => g.op("Mul", [x, g.op("Add", [max(g, x), c(g, 1)])])),
        "not a Sub",
      ).to.deep.equal(refused);
      const sum = (g: GraphBuilder, t: string) => g.op("ReduceSum", [t, g.constInt64([1])], [attrInt("keepdims", 1)]);
      expect(rule((g, x) => g.op("Add", [x, g.op("Mul", [sum(g, x), c(g, 0)])]))).to.deep.equal([]);
      const notZero = ["ReduceSum of something other than x·0, or not itself taken times 0 into a sum"];
      expect(
        rule((g, x) => g.op("Add", [x, g.op("Mul", [sum(g, x), c(g, 2)])])),
        "times 2",
      ).to.deep.equal(notZero);
      expect(
        rule((g, x) => g.op("Div", [x, g.op("Mul", [sum(g, x), c(g, 0)])])),
        "its sign shows in Div",
      ).to.deep.equal(notZero);
    });
  });
});

describe("workloads: block scales at their boundaries", function () {
  // block maxima at a = 127·2^k and its neighbours (where a one-bit rounding could land on either power), the clamp
  // and the split's overflow; the scale of a row [a, −a/3] from quantizeRows, plain and lean
  const maxima = [0, 2 ** -100, 2 ** -93, 2 ** -70, 2 ** 104, 2 ** 104.3, 2 ** 104.5];
  for (const k of [-80, -20, -7, 0, 1, 5, 60, 96])
    for (const e of [-2, -1, 0, 1, 2]) maxima.push(f(127 * 2 ** k * (1 + e * 2 ** -23)));
  for (const lean of [false, true])
    it(`${lean ? "lean" : "plain"}: P is a power of two with a ≤ 127·P, as written down; NaN past the split's limit`, async function () {
      const a = Float32Array.from(maxima.map(f));
      const R = a.length;
      const x = Float32Array.from({ length: 2 * R }, (_, i) => (i % 2 ? -a[i >> 1] / 3 : a[i >> 1]));
      const g = new GraphBuilder("scales");
      const input = g.input("x", [R, 2]);
      g.output("scale", quantizeRows(g, input, 1, lean ? { rows: "r", length: 2 } : undefined).scale, [R]);
      const s = await createSession(g.encode(), "cpu");
      const P = (await s.run({ x: f32(x, [R, 2]) })).scale.data as Float32Array;
      await s.release();
      a.forEach((ai, i) => {
        if (ai >= 2 ** 104.4) return expect(P[i], `a = ${ai}`).to.be.NaN;
        // lean raises a by 2^−93 instead of clamping: the same from 2^−68 up
        const ref = lean ? blockScale(f(ai + 2 ** -93)) : blockScale(ai);
        expect(P[i], `a = ${ai}`).to.equal(ref);
        expect(Number.isInteger(Math.log2(P[i])), `a = ${ai}: a power of two`).to.equal(true);
        expect(ai, `a = ${ai}`).to.be.at.most(127 * P[i]);
        if (ai > 2 ** -80) expect(ai / P[i], `a = ${ai}: no bit wasted`).to.be.above(63.49);
      });
    });
});

describe("workloads: lean blocks", function () {
  it("a lean block past 2^20 elements is refused when the graph is built (its (Σ t)·0 could overflow in some orders)", function () {
    const g = new GraphBuilder("big");
    const t = g.input("t", ["rows", 2 ** 20 + 1]);
    expect(() => quantizeRows(g, t, 1, { rows: "r", length: 2 ** 20 + 1 })).to.throw(/could overflow its poison sum/);
    expect(() => quantizeRows(g, t, 1, { rows: "r", length: 2 ** 20 })).not.to.throw();
    expect(() => quantizeRows(g, t, 1, { rows: "r", length: -1 }), "an unknown length").to.throw(/length known/);
  });
});

/** hT [I, S] · d [S, O] with one block for all of hT and one for all of d (a weight gradient's atom). */
function referenceWeightGrad(hT: Float32Array, d: Float32Array, I: number, S: number, O: number): Float32Array {
  const whole = (t: Float32Array) => limbsOf(t, 1);
  // the blocks are the atom's whole h and d: quantize the flat tensors, keep the layout
  const [qh, qd] = [whole(hT), whole(d)];
  const out = new Float32Array(I * O);
  const scale = f(qh.P * qd.P);
  for (let i = 0; i < I; i++) {
    for (let o = 0; o < O; o++) {
      let sum = 0;
      for (let s = 0; s < S; s++) sum += qh.hi[i * S + s] * qd.hi[s * O + o];
      out[i * O + o] = f(f(sum) * scale);
    }
  }
  return out;
}
