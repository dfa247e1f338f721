// Data-movement helpers the CNN's graphs and products share (int64 operands made per use, as ONNX wants them).
import { GraphBuilder, attrInts } from "../../onnx/builder.ts";

export const i64 = (g: GraphBuilder, v: number[]) => g.constInt64(v);
export const reshape = (g: GraphBuilder, t: string, dims: number[]) => g.op("Reshape", [t, i64(g, dims)]);
/** t reshaped to the shape of another tensor. */
export const like = (g: GraphBuilder, t: string, shapeOf: string) => g.op("Reshape", [t, g.op("Shape", [shapeOf])]);
export const transpose = (g: GraphBuilder, t: string, perm: number[]) =>
  g.op("Transpose", [t], [attrInts("perm", perm)]);
export const pad = (g: GraphBuilder, t: string, pads: number[]) => g.op("Pad", [t, i64(g, pads)]);
/** Slice of t along `axes`, with optional strides. */
export const window = (
  g: GraphBuilder,
  t: string,
  starts: number[],
  ends: number[],
  axes: number[],
  steps?: number[],
) => g.op("Slice", [t, i64(g, starts), i64(g, ends), i64(g, axes), ...(steps ? [i64(g, steps)] : [])]);
