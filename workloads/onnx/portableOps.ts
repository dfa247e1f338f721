// The portable-op rule: which ONNX ops a template graph may use (reasons in workloads/README.md).
import { decodeModel, type GraphProtoObj } from "./builder.ts";

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
];
/** Control flow whose body graphs are checked with the same rule. */
const CONTROL = ["Scan"];

export const PORTABLE_OPS: ReadonlySet<string> = new Set([...ARITHMETIC, ...SELECTION, ...MOVEMENT, ...CONTROL]);

type Node = { opType?: string; domain?: string; attribute?: { g?: GraphProtoObj }[] };

/** Every op type a graph uses, body graphs (Scan) included, as `domain:op` when not the default domain. */
export function graphOpTypes(graph: GraphProtoObj, into = new Set<string>()): Set<string> {
  for (const n of (graph.node ?? []) as Node[]) {
    into.add(n.domain ? `${n.domain}:${n.opType}` : String(n.opType));
    for (const a of n.attribute ?? []) if (a.g) graphOpTypes(a.g, into);
  }
  return into;
}

/** Ops of a model outside PORTABLE_OPS, sorted ([] when the graph is portable). */
export function nonPortableOps(model: Uint8Array): string[] {
  return [...graphOpTypes(decodeModel(model).graph)].filter((op) => !PORTABLE_OPS.has(op)).sort();
}

/** Throws when a template graph uses an op whose result may depend on the kernel, SIMD width or device. */
export function assertPortable(what: string, model: Uint8Array): void {
  const bad = nonPortableOps(model);
  if (bad.length) throw new Error(`${what} uses ops outside the portable set: ${bad.join(", ")}`);
}
