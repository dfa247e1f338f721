/**
 * Which elementwise operations an execution provider rounds differently from onnxruntime's CPU kernels: each op as
 * a one-node graph, the same inputs on both providers, the number of outputs whose bits differ. `npm run
 * prove-profile -- --ops` prints it; a template whose hashes differ on a device differs through these ops.
 * The inputs: uniform in (−1, 1), wide exponents (2^±30), subnormal-sized, halves (rounding ties), and NaN, ±∞ and
 * ±0 mixed with ordinary values (a NaN must stay a NaN: poisoning relies on it; its payload bits may differ).
 */
import { GraphBuilder, attrInt, attrInts } from "../workloads/onnx/builder.ts";
import { inverseSqrt, reciprocal } from "../workloads/onnx/exact.ts";
import { DT } from "../workloads/onnx/schema.ts";
import { ort, sessionOptions, type ExecutionProvider } from "../workloads/runtime.ts";

const N = 1 << 16;

export type OpRounding = { op: string; inputs: string; differ: number; of: number; example?: string; error?: string };

/** A fixed pseudo-random stream (the same inputs on every machine). */
function stream(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

const INPUTS: Record<string, (r: () => number) => number> = {
  unit: (r) => r() * 2 - 1,
  wide: (r) => (r() * 2 - 1) * 2 ** Math.floor(r() * 60 - 30),
  subnormal: (r) => (r() * 2 - 1) * 2 ** Math.floor(r() * 30 - 140),
  ties: (r) => Math.round((r() * 2 - 1) * 64) / 2 + 0.5,
  // NaN, ±∞ and ±0 among ordinary values: the templates rely on NaN staying NaN (a poisoned step is refused everywhere)
  special: (r) => [NaN, Infinity, -Infinity, 0, -0, r() * 2 - 1][Math.floor(r() * 6)],
};

type Probe = { op: string; arity: 1 | 2; build: (g: GraphBuilder, x: string[]) => { y: string; type?: number } };

const elementwise = (op: string, arity: 1 | 2): Probe => ({ op, arity, build: (g, x) => ({ y: g.op(op, x) }) });

/** The float ops the templates use (workloads/onnx/portableOps.ts), in the forms they use them. */
export const PROBES: readonly Probe[] = [
  ...["Add", "Sub", "Mul", "Div"].map((op) => elementwise(op, 2)),
  ...["Sqrt", "Neg", "Abs", "Floor", "Ceil"].map((op) => elementwise(op, 1)),
  { op: "Div(1,x)", arity: 1, build: (g, [x]) => ({ y: g.op("Div", [g.constFloat([1], []), x]) }) },
  { op: "Div(x,8)", arity: 1, build: (g, [x]) => ({ y: g.op("Div", [x, g.constFloat([8], [])]) }) },
  { op: "Div(x,3)", arity: 1, build: (g, [x]) => ({ y: g.op("Div", [x, g.constFloat([3], [])]) }) },
  // 1/P for a block scale P (onnx/integer.ts): a power of two as a tensor, 2^k with k from x (|k| ≤ 100)
  {
    op: "Div(1,2^k)",
    arity: 1,
    build: (g, [x]) => {
      const raw = g.op("Floor", [g.op("Mul", [x, g.constFloat([1 / 3], [])])]);
      const k = g.op("Where", [g.op("Equal", [raw, raw]), raw, g.constFloat([0], [])]); // NaN → 0: an index
      const table = g.constFloat(
        Array.from({ length: 201 }, (_, i) => 2 ** (i - 100)),
        [201],
      );
      const clamped = g.op("Add", [
        g.op("Where", [
          g.op("Less", [k, g.constFloat([-100], [])]),
          g.constFloat([-100], []),
          g.op("Where", [g.op("Greater", [k, g.constFloat([100], [])]), g.constFloat([100], []), k]),
        ]),
        g.constFloat([100], []),
      ]);
      const p2 = g.op("Gather", [table, g.op("Cast", [clamped], [attrInt("to", DT.INT64)])]);
      return { y: g.op("Div", [g.constFloat([1], []), p2]) };
    },
  },
  {
    op: "QuantizeLinear(x,0.0123,128)",
    arity: 1,
    build: (g, [x]) => ({
      y: g.op("QuantizeLinear", [x, g.constFloat([0.0123], []), g.constInt([128], [], DT.UINT8)]),
      type: DT.UINT8,
    }),
  },
  {
    op: "ReduceMax(64)",
    arity: 1,
    build: (g, [x]) => ({
      y: g.op(
        "ReduceMax",
        [g.op("Reshape", [x, g.constInt64([N / 64, 64])])],
        [attrInts("axes", [1]), attrInt("keepdims", 0)],
      ),
    }),
  },
  { op: "Where(x<y)", arity: 2, build: (g, [x, y]) => ({ y: g.op("Where", [g.op("Less", [x, y]), x, y]) }) },
  // The Div- and Sqrt-free replacements (workloads/onnx/exact.ts), on |x|: the same bits wherever + − × are exact?
  { op: "reciprocal(|x|)", arity: 1, build: (g, [x]) => ({ y: reciprocal(g, g.op("Abs", [x])) }) },
  { op: "inverseSqrt(|x|)", arity: 1, build: (g, [x]) => ({ y: inverseSqrt(g, g.op("Abs", [x])) }) },
];

async function runOn(bytes: Uint8Array, feeds: Float32Array[], ep: ExecutionProvider): Promise<ArrayLike<number>> {
  const s = await ort.InferenceSession.create(bytes, sessionOptions(ep));
  try {
    const named = Object.fromEntries(feeds.map((f, i) => [`x${i}`, new ort.Tensor("float32", f, [N])]));
    return (await s.run(named)).y.data as unknown as ArrayLike<number>;
  } finally {
    await s.release();
  }
}

const bitsOf = (a: ArrayLike<number>) => {
  const v = a as unknown as { buffer: ArrayBuffer; byteOffset: number; byteLength: number; BYTES_PER_ELEMENT: number };
  return { bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength), width: v.BYTES_PER_ELEMENT };
};

/** Outputs whose bits differ between the two runs, and the first of them as an example. */
export function compareBits(
  cpu: ArrayLike<number>,
  other: ArrayLike<number>,
  inputs: Float32Array[],
): Pick<OpRounding, "differ" | "example"> {
  const [a, b] = [bitsOf(cpu), bitsOf(other)];
  let differ = 0;
  let example: string | undefined;
  for (let i = 0; i < cpu.length; i++) {
    let same = true;
    for (let k = 0; k < a.width; k++) same &&= a.bytes[i * a.width + k] === b.bytes[i * a.width + k];
    if (same) continue;
    differ++;
    example ??= `${inputs.map((x) => x[i]).join(", ")} → cpu ${cpu[i]}, other ${other[i]}`;
  }
  return { differ, example };
}

/** Each probe on each input kind: the CPU provider against `ep`. */
export async function opRounding(ep: ExecutionProvider, print: (line: string) => void): Promise<OpRounding[]> {
  const out: OpRounding[] = [];
  for (const [kind, draw] of Object.entries(INPUTS)) {
    for (const p of PROBES) {
      const r = stream(0x5eed + out.length);
      const inputs = Array.from({ length: p.arity }, () => Float32Array.from({ length: N }, () => draw(r)));
      const g = new GraphBuilder("probe");
      const x = inputs.map((_, i) => g.input(`x${i}`, [N]));
      const { y, type } = p.build(g, x);
      g.output("y", y, undefined, type ?? DT.FLOAT);
      const bytes = g.encode();
      const name = `op_differs_${p.op}_${kind}`;
      let result: OpRounding;
      try {
        const [cpu, other] = [await runOn(bytes, inputs, "cpu"), await runOn(bytes, inputs, ep)];
        result = { op: p.op, inputs: kind, of: cpu.length, ...compareBits(cpu, other, inputs) };
      } catch (err) {
        // one op a provider cannot run must not hide the others
        result = { op: p.op, inputs: kind, of: 0, differ: 0, error: (err as Error).message.split("\n")[0] };
        print(`${name}: error (${result.error})`);
        out.push(result);
        continue;
      }
      out.push(result);
      print(`${name}: ${result.differ} of ${result.of}` + (result.example ? ` (${result.example})` : ""));
    }
  }
  return out;
}
