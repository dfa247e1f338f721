/**
 * workloads/onnx/exact.ts reciprocal and inverseSqrt: 1/x and 1/√x from +, −, ×, comparisons and Where alone (an
 * NVIDIA H200's WebGPU Div and Sqrt are not correctly rounded; these gave the CPU's bits there, docs/WORKLOADS.md).
 * Checked here on onnxruntime's CPU provider against the correctly rounded float32 result, over their whole range.
 */
import { expect } from "chai";
import { GraphBuilder, decodeModel } from "../../workloads/onnx/builder.ts";
import { inverseSqrt, reciprocal, reciprocalOn } from "../../workloads/onnx/exact.ts";
import { ort, sessionOptions } from "../../workloads/runtime.ts";

const N = 1 << 16;

/** Distance in units in the last place between two positive float32 values. */
function ulps(a: number, b: number): number {
  const f = new Float32Array([a, b]);
  const u = new Int32Array(f.buffer);
  return Math.abs(u[0] - u[1]);
}

async function evaluate(build: (g: GraphBuilder, x: string) => string, x: Float32Array) {
  const g = new GraphBuilder("probe");
  g.output("y", build(g, g.input("x", [x.length])), [x.length]);
  const bytes = g.encode();
  const s = await ort.InferenceSession.create(bytes, sessionOptions("cpu"));
  try {
    const y = (await s.run({ x: new ort.Tensor("float32", x, [x.length]) })).y.data as Float32Array;
    const ops = new Set((decodeModel(bytes).graph.node as { opType: string }[]).map((n) => n.opType));
    return { y, ops };
  } finally {
    await s.release();
  }
}

/** x = 2^e for e evenly over [lo, hi), rounded to float32, plus the range's ends, 1, 2 and 3. */
function sample(lo: number, hi: number): Float32Array {
  const x = Float32Array.from({ length: N }, (_, i) => 2 ** (lo + ((hi - lo) * i) / N));
  x.set([2 ** lo, Math.fround(2 ** hi * (1 - 2 ** -24)), 1, 2, 3], 0);
  return x;
}

describe("workloads: division and square root without Div or Sqrt", function () {
  const cases = [
    { name: "reciprocal", build: reciprocal, exact: (x: number) => 1 / x, range: [-31, 32] },
    { name: "inverseSqrt", build: inverseSqrt, exact: (x: number) => 1 / Math.sqrt(x), range: [-30, 32] },
    // the ranges the templates ask for: the log's 1/(m+1), m+1 in [1.7, 2.42); a softmax's 1/Σ, Σ in [1, C]
    {
      name: "reciprocal on [1, 4)",
      build: (g: GraphBuilder, x: string) => reciprocal(g, x, 0, [0, 2]),
      exact: (x: number) => 1 / x,
      range: [0, 2],
    },
    {
      name: "reciprocal on [1, 16)",
      build: (g: GraphBuilder, x: string) => reciprocal(g, x, 0, [0, 4]),
      exact: (x: number) => 1 / x,
      range: [0, 4],
    },
    // a small softmax's 1/Σ without normalising (reciprocalOn), Σ in [0.99, C]: blobs-tiny's C = 4, the MNIST ones' 10
    ...[4, 10].map((C) => ({
      name: `reciprocalOn [0.99, ${C}]`,
      build: (g: GraphBuilder, x: string) => reciprocalOn(g, x, 0, 0.99, C),
      exact: (x: number) => 1 / x,
      range: [Math.log2(0.99), Math.log2(C)],
    })),
  ] as const;
  for (const c of cases) {
    it(`${c.name}: within 2 ulp of the correctly rounded result over 2^${+c.range[0].toFixed(3)} … 2^${+c.range[1].toFixed(3)}, no Div or Sqrt node`, async function () {
      const x = sample(c.range[0], c.range[1]);
      const { y, ops } = await evaluate(c.build, x);
      expect([...ops].filter((op) => op === "Div" || op === "Sqrt")).to.deep.equal([]);
      const errors = Array.from(x, (xi, i) => ulps(y[i], Math.fround(c.exact(xi))));
      const exactShare = errors.filter((e) => e === 0).length / N;
      console.log(
        `      ${c.name}: worst ${Math.max(...errors)} ulp, ${(100 * exactShare).toFixed(1)} % correctly rounded`,
      );
      expect(Math.max(...errors)).to.be.at.most(2);
      expect(exactShare, "most results correctly rounded").to.be.greaterThan(0.5);
      if (c.name === "reciprocal") expect(Array.from(y.slice(2, 4)), "1/1, 1/2: exact").to.deep.equal([1, 0.5]);
    });
  }

  it("reciprocalOn refuses a range it was not made for (0 or below, or wider than 64: use reciprocal)", function () {
    const g = new GraphBuilder("range");
    const x = g.input("x", [1]);
    for (const [lo, hi] of [
      [0, 4],
      [-1, 4],
      [1, 65],
    ])
      expect(() => reciprocalOn(g, x, 0, lo, hi), `[${lo}, ${hi}]`).to.throw(RangeError, /reciprocalOn wants/);
  });
});
