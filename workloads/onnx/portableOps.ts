// The portable-op rule: which ONNX ops a template graph may use (reasons in workloads/README.md).
import { decodeModel, type GraphProtoObj } from "./builder.ts";
import { DT } from "./schema.ts";

/** Correctly rounded per element by IEEE 754 (one rounding, no order, no kernel choice). */
const ARITHMETIC = ["Add", "Sub", "Mul", "Div", "Sqrt", "Neg", "Abs", "Floor", "Ceil"];
/** Exact comparisons and selection (no rounding at all). */
const SELECTION = ["Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal", "Where", "Not", "And", "Or"];
/** Pure data movement: values are copied, never computed. */
const MOVEMENT = [
  "Identity",
  "Reshape",
  "Transpose",
  "Slice",
  "Concat",
  "Split",
  "Gather",
  "Squeeze",
  "Unsqueeze",
  "Expand",
  "Pad",
  "DepthToSpace",
];
/** Control flow whose body graphs are checked with the same rule. */
const CONTROL = ["Scan"];
/**
 * Exact integer products (onnx/integer.ts), under the conditions `integerProblems` checks: uint8 × uint8
 * MatMulInteger on QuantizeLinear limbs with zero points 128 or 127 (u8 × s8 saturates before VNNI), Cast only to
 * float (or to int64 of a Floor: a table index), ReduceMax only of magnitudes (max is exact; |x| has no −0) or as a
 * softmax shift (SHIFT), ReduceSum only of x·0 (0 or NaN in any order) or taken times 0 into a sum (±0 or NaN
 * in any order: onnx/integer.ts quantizeRows), Shape (metadata).
 *
 * SHIFT: x − (ReduceMax(x) + c), c a nonzero constant, the max used for nothing else. The maximum of floats is one
 * of them whatever the order, so two kernels can differ only in (i) which zero they return when +0 and −0 tie for
 * the maximum — +0 + c and −0 + c are the same float when c ≠ 0 — and (ii) a NaN in x: some kernels return it, some
 * skip it. Then x − m is NaN at the NaN's own position whatever m is, the shifted row holds a NaN on every device,
 * and whatever follows (a softmax over the row: its sum, or an integer product's poison term) is NaN there too:
 * the step's state is non-finite and refused everywhere, as any other NaN.
 */
const INTEGER = ["MatMulInteger", "Cast", "QuantizeLinear", "DequantizeLinear", "ReduceMax", "ReduceSum", "Shape"];
/**
 * CLIP: Clip(x, lo) with lo a finite nonzero float constant and no upper bound, where x is also checked for NaN by
 * Σ(x·0) (a ReduceSum of x·0: onnx/integer.ts quantizeUnitRows' nanOf) whose result is added into something that
 * the clipped values also reach. For finite x, max(x, lo) is x or lo, exact and the same on every device (a zero lo
 * would tie with ±0, which x86 and ARM resolve differently; a NaN lo is returned by some kernels, ignored by
 * others); a NaN x a kernel may keep or replace by lo, and onnxruntime's CPU clips +∞ to the largest float: Σ(x·0)
 * is NaN for NaN and ±∞ alike, so what the clipped values reach is NaN on every device.
 */
const CONDITIONAL = ["Clip"];

export const PORTABLE_OPS: ReadonlySet<string> = new Set([
  ...ARITHMETIC,
  ...SELECTION,
  ...MOVEMENT,
  ...CONTROL,
  ...INTEGER,
  ...CONDITIONAL,
]);

type Attribute = { name?: string; i?: number | { toNumber(): number }; g?: GraphProtoObj };
type Node = { opType?: string; domain?: string; input?: string[]; output?: string[]; attribute?: Attribute[] };
type Initializer = { name?: string; dataType?: number; dims?: unknown[]; int32Data?: number[]; floatData?: number[] };

/** Every op type a graph uses, body graphs (Scan) included, as `domain:op` when not the default domain. */
export function graphOpTypes(graph: GraphProtoObj, into = new Set<string>()): Set<string> {
  for (const n of (graph.node ?? []) as Node[]) {
    into.add(n.domain ? `${n.domain}:${n.opType}` : String(n.opType));
    for (const a of n.attribute ?? []) if (a.g) graphOpTypes(a.g, into);
  }
  return into;
}

const intAttr = (n: Node, name: string): number | undefined => {
  const v = n.attribute?.find((a) => a.name === name)?.i;
  return v === undefined ? undefined : Number(v);
};

/** A graph's wiring, for the pattern rules: who makes each tensor, who reads it, and its float scalar constants. */
function indexGraph(graph: GraphProtoObj) {
  const nodes = (graph.node ?? []) as Node[];
  const producer = new Map<string, Node>();
  const readers = new Map<string, Node[]>();
  for (const n of nodes) {
    for (const o of n.output ?? []) producer.set(o, n);
    for (const i of n.input ?? []) {
      if (!readers.has(i)) readers.set(i, []);
      readers.get(i)!.push(n);
    }
  }
  const inits = new Map(((graph.initializer ?? []) as Initializer[]).map((t) => [t.name, t]));
  /** The node that makes `name` ({} for an input, a constant or nothing). */
  const made = (name: string | undefined): Node => (name === undefined ? undefined : producer.get(name)) ?? {};
  /** The nodes that read `name`. */
  const consumers = (name: string | undefined): Node[] => (name === undefined ? undefined : readers.get(name)) ?? [];
  /** The value of a float scalar constant (undefined for anything else). */
  const floatConst = (name: string | undefined): number | undefined => {
    const c = name === undefined ? undefined : inits.get(name);
    return c?.dataType === DT.FLOAT && c.floatData?.length === 1 ? c.floatData[0] : undefined;
  };
  return { nodes, inits, made, consumers, floatConst };
}

/**
 * Where a graph (and its bodies) uses an integer-rule op outside its conditions (see INTEGER): each breach
 * named. Limbs may pass through data movement (Concat, Transpose, Reshape) on their way to MatMulInteger.
 */
export function integerProblems(graph: GraphProtoObj, out: string[] = []): string[] {
  const { nodes, inits, made, consumers, floatConst } = indexGraph(graph);
  // 128, or 127 (onnx/integer.ts quantizeUnitRows): either way every limb stands for a value of magnitude ≤ 128
  const isZeroPointConst = (name: string | undefined): boolean => {
    const t = name === undefined ? undefined : inits.get(name);
    const v = t?.int32Data?.[0];
    return (
      t?.dataType === DT.UINT8 && (t.dims ?? []).length === 0 && t.int32Data?.length === 1 && (v === 128 || v === 127)
    );
  };
  const isZeroPoint = (name: string | undefined): boolean => {
    const n = made(name);
    // the constant, or 128s shaped like a scale: QuantizeLinear(scale·0, 1, 128) (onnx/integer.ts zeroPoints)
    return (
      isZeroPointConst(name) ||
      (n.opType === "QuantizeLinear" && timesZero(n.input?.[0]) && isZeroPointConst(n.input?.[2]))
    );
  };
  const isLimb = (name: string): boolean => {
    const n = made(name);
    if (n.opType === "Concat") return (n.input ?? []).every(isLimb);
    if (n.opType === "Transpose" || n.opType === "Reshape") return isLimb(n.input![0]);
    return n.opType === "QuantizeLinear";
  };
  const madeBy = (name: string | undefined, op: string) => made(name).opType === op;
  const timesZero = (name: string | undefined): boolean => {
    const n = made(name);
    return n.opType === "Mul" && floatConst(n.input?.[1]) === 0;
  };
  // an exact int32 sum: MatMulInteger's output, or the same reshaped (data movement)
  const isInt32Sum = (name: string | undefined): boolean => {
    const n = made(name);
    return n.opType === "MatMulInteger" || (n.opType === "Reshape" && isInt32Sum(n.input?.[0]));
  };
  const isNegFloor = (name: string | undefined) => madeBy(name, "Neg") && madeBy(made(name).input?.[0], "Floor");
  const isFiniteNonzeroConst = (name: string | undefined): boolean => {
    const v = floatConst(name);
    return v !== undefined && Number.isFinite(v) && v !== 0;
  };
  const isNonzeroConst = (name: string | undefined): boolean => {
    const v = floatConst(name);
    return v !== undefined && v !== 0;
  };
  // ReduceMax(x) + c (c a nonzero constant: either zero gives the same sum) used only as Sub(x, ·): see SHIFT
  const isSoftmaxShift = (max: Node): boolean => {
    const x = max.input?.[0];
    const adds = consumers(max.output![0]);
    return (
      adds.length > 0 &&
      adds.every((s) => s.opType === "Add" && s.input?.[0] === max.output![0] && isNonzeroConst(s.input?.[1])) &&
      adds.every((s) => {
        const subs = consumers(s.output![0]);
        return (
          subs.length > 0 &&
          subs.every((u) => u.opType === "Sub" && u.input?.[0] === x && u.input?.[1] === s.output![0])
        );
      })
    );
  };
  // (Σ x)·0 added to something (onnx/integer.ts quantizeRows, poisonOfSum): ±0, or NaN when x holds NaN or ±∞
  const isSumTimesZero = (sum: Node): boolean => {
    const muls = consumers(sum.output![0]);
    return (
      muls.length > 0 &&
      muls.every((m) => {
        const adds = consumers(m.output![0]);
        return timesZero(m.output![0]) && adds.length > 0 && adds.every((x) => x.opType === "Add");
      })
    );
  };
  // every tensor reachable from `from` (its consumers' outputs, transitively)
  const reachable = (from: string): Set<string> => {
    const seen = new Set<string>();
    const todo = [from];
    while (todo.length) {
      for (const n of consumers(todo.pop()))
        for (const o of n.output ?? []) {
          if (seen.has(o)) continue;
          seen.add(o);
          todo.push(o);
        }
    }
    return seen;
  };
  // x's NaN check Σ(x·0), added into a tensor that the clip's output also reaches (see CLIP)
  const nanChecked = (x: string | undefined, clipped: string): boolean => {
    const reach = reachable(clipped);
    const meetsClipped = (t: string) => reach.has(t) || [...reachable(t)].some((u) => reach.has(u));
    return consumers(x).some(
      (m) =>
        m.opType === "Mul" &&
        m.input?.[0] === x &&
        timesZero(m.output![0]) &&
        consumers(m.output![0]).some(
          (r) =>
            r.opType === "ReduceSum" &&
            consumers(r.output![0]).some((add) => add.opType === "Add" && meetsClipped(add.output![0])),
        ),
    );
  };
  for (const n of nodes) {
    const [a, b, za, zb] = n.input ?? [];
    if (
      n.opType === "Clip" &&
      !((n.input ?? []).length === 2 && isFiniteNonzeroConst(b) && nanChecked(a, n.output![0]))
    ) {
      out.push("Clip other than Clip(x, finite nonzero constant) of an x whose NaN check Σ(x·0) meets its output");
    }
    // QuantizeLinear/DequantizeLinear: (x, scale, zero point); MatMulInteger: (a, b, a's, b's zero point)
    const wholeIndex = intAttr(n, "to") === DT.INT64 && (madeBy(a, "Floor") || isNegFloor(a));
    if (n.opType === "Cast" && intAttr(n, "to") !== DT.FLOAT && !wholeIndex) {
      out.push(`Cast to type ${intAttr(n, "to")} (only float, or int64 of a Floor)`);
    }
    if (n.opType === "MatMulInteger") {
      if (!isLimb(a) || !isLimb(b)) out.push("MatMulInteger on an operand that is not QuantizeLinear limbs");
      if (!isZeroPointConst(za) || !isZeroPointConst(zb))
        out.push("MatMulInteger without uint8 zero points 128 (or 127)");
    }
    const int32Sum = n.opType === "DequantizeLinear" && za === undefined && isInt32Sum(a);
    if ((n.opType === "QuantizeLinear" || n.opType === "DequantizeLinear") && !isZeroPoint(za) && !int32Sum) {
      out.push(`${n.opType} without uint8 zero point 128 or 127 (or of an int32 sum)`);
    }
    if (n.opType === "ReduceMax" && !madeBy(a, "Abs") && !isSoftmaxShift(n)) {
      out.push("ReduceMax of something other than Abs or a softmax shift");
    }
    if (n.opType === "ReduceSum" && !timesZero(a) && !isSumTimesZero(n)) {
      out.push("ReduceSum of something other than x·0, or not itself taken times 0 into a sum");
    }
    for (const at of n.attribute ?? []) if (at.g) integerProblems(at.g, out);
  }
  return out;
}

/** Ops of a model outside PORTABLE_OPS, and integer-rule breaches, sorted ([] when the graph is portable). */
export function nonPortableOps(model: Uint8Array): string[] {
  const { graph } = decodeModel(model);
  const ops = [...graphOpTypes(graph)].filter((op) => !PORTABLE_OPS.has(op));
  return [...new Set([...ops, ...integerProblems(graph)])].sort();
}

/** Throws when a template graph uses an op whose result may depend on the kernel, SIMD width or device. */
export function assertPortable(what: string, model: Uint8Array): void {
  const bad = nonPortableOps(model);
  if (bad.length) throw new Error(`${what} uses ops outside the portable set: ${bad.join(", ")}`);
}

/**
 * The GPU rule (docs/WORKLOADS.md, "The GPU path on an H200"): a GPU's WGSL division and square root need not be
 * correctly rounded (the H200's were not: 1 ulp off in 14–69 % of results), while its +, −, ×, comparisons and
 * selections were, and so was its division by a power of two (`Div(x, 8)`: every bit as the CPU's). So `Sqrt`, and
 * `Div` by anything but a power of two, are listed here: a template without them can give the CPU's bits on such a
 * GPU (exact.ts `reciprocal`, `inverseSqrt` replace them). A power of two is a constant normal one, or a block scale
 * (onnx/integer.ts `blockScale`: z = a·c for a block maximum a clamped at 2^−93 and c in [2^−8, 2^8], rounded to one
 * bit, R = γ + (z − γ), times a constant power of two, plus the
 * poison term). Counts per kind, body graphs included; {} when the graph has none.
 */
export function gpuInexactOps(model: Uint8Array): Record<string, number> {
  const out: Record<string, number> = {};
  const visit = (graph: GraphProtoObj) => {
    const { nodes, made, floatConst } = indexGraph(graph);
    // a normal power of two: a subnormal one is 0 on a device that flushes subnormals
    const constPowerOfTwo = (name: string | undefined) => {
      const e = Math.log2(Math.abs(floatConst(name) ?? NaN));
      return Number.isInteger(e) && e >= -126 && e <= 127;
    };
    const constant = (name: string | undefined, v: number) => floatConst(name) === v;
    // a constant in [2^−8, 2^8]: z = a·c stays a normal float for a ≥ 2^−93
    const modestConst = (name: string | undefined) => {
      const v = floatConst(name);
      return v !== undefined && v >= 2 ** -8 && v <= 2 ** 8;
    };
    // a block maximum kept at or above 2^−93: amax + 2^−93, or Where(amax < 2^−93, 2^−93, amax) (never 0)
    const clampedMax = (name: string | undefined) => {
      const n = made(name);
      if (n.opType === "Add") return constant(n.input?.[1], 2 ** -93);
      const less = made(n.input?.[0]);
      return (
        n.opType === "Where" &&
        less.opType === "Less" &&
        constant(less.input?.[1], 2 ** -93) &&
        constant(n.input?.[1], 2 ** -93) &&
        n.input?.[2] === less.input?.[0]
      );
    };
    // R = γ + (z − γ) with γ = z·(2^23 + 1), z = a·c for a clamped maximum a: z rounded to one significant bit, a
    // nonzero normal power of two (onnx/integer.ts blockScale)
    const roundedToOneBit = (name: string | undefined) => {
      const n = made(name);
      const sub = made(n.input?.[1]);
      const gamma = made(n.input?.[0]);
      const z = gamma.input?.[0];
      const zMade = made(z);
      return (
        n.opType === "Add" &&
        sub.opType === "Sub" &&
        gamma.opType === "Mul" &&
        constant(gamma.input?.[1], 2 ** 23 + 1) &&
        sub.input?.[0] === z &&
        sub.input?.[1] === n.input?.[0] &&
        zMade.opType === "Mul" &&
        clampedMax(zMade.input?.[0]) &&
        modestConst(zMade.input?.[1])
      );
    };
    // the poison term: (Σ t)·0 or Σ (t·0), zero for a finite block, NaN otherwise
    const timesZero = (name: string | undefined) => {
      const n = made(name);
      if (n.opType === "Mul") return constant(n.input?.[1], 0);
      return (
        n.opType === "ReduceSum" && made(n.input?.[0]).opType === "Mul" && constant(made(n.input?.[0]).input?.[1], 0)
      );
    };
    const blockScale = (name: string | undefined) => {
      const add = made(name);
      const mul = made(add.input?.[0]);
      return (
        add.opType === "Add" &&
        timesZero(add.input?.[1]) &&
        mul.opType === "Mul" &&
        roundedToOneBit(mul.input?.[0]) &&
        constPowerOfTwo(mul.input?.[1])
      );
    };
    for (const n of nodes) {
      const divisor = n.input?.[1];
      const kind =
        n.opType === "Sqrt"
          ? "Sqrt"
          : n.opType === "Div" && !constPowerOfTwo(divisor) && !blockScale(divisor)
            ? "Div (not by a power of two)"
            : undefined;
      if (kind) out[kind] = (out[kind] ?? 0) + 1;
      for (const a of n.attribute ?? []) if (a.g) visit(a.g);
    }
  };
  visit(decodeModel(model).graph);
  return out;
}
