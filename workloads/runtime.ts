// onnxruntime session creation with the settings that make results bitwise reproducible.
import ort from "onnxruntime-node";
import { ExecutionProviderError } from "./errors.ts";

export type ExecutionProvider = "cpu" | "cuda" | "webgpu";

/**
 * One intra-op and one inter-op thread and sequential execution: thread count changes how
 * onnxruntime splits (and so rounds) reductions. Graph optimizations are disabled so the exact
 * committed graph runs: fusions such as MatMul+Add→Gemm change rounding and depend on the provider.
 */
export function sessionOptions(provider: ExecutionProvider): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: [provider],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "disabled",
  };
}

export async function createSession(model: Uint8Array, provider: ExecutionProvider): Promise<ort.InferenceSession> {
  if (!["cpu", "cuda", "webgpu"].includes(provider))
    throw new ExecutionProviderError(provider, "unknown provider name");
  try {
    return await ort.InferenceSession.create(model, sessionOptions(provider));
  } catch (e) {
    if (provider !== "cpu") throw new ExecutionProviderError(provider, e);
    throw e;
  }
}

export function f32(data: Float32Array, dims: readonly number[]): ort.Tensor {
  return new ort.Tensor("float32", data, dims);
}

export type Feeds = Record<string, ort.Tensor>;
export { ort };
