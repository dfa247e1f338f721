// Typed errors, so callers (agent, verifiers) can branch on `instanceof` or `.code`.

export class WorkloadError extends Error {
  code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

export class UnknownTemplateError extends WorkloadError {
  constructor(nameOrId: string) {
    super("UNKNOWN_TEMPLATE", `unknown workload template: ${nameOrId}`);
  }
}

export type CheckpointFormatCode = "BAD_MAGIC" | "BAD_VERSION" | "TRUNCATED" | "TRAILING_BYTES" | "INCONSISTENT";

export class CheckpointFormatError extends WorkloadError {
  constructor(code: CheckpointFormatCode, message: string) {
    super(code, `invalid checkpoint/state blob: ${message}`);
  }
}

export class NonFiniteError extends WorkloadError {
  tensor: string;
  index: number;
  constructor(tensor: string, index: number, value: number) {
    super("NON_FINITE", `tensor ${tensor} holds ${value} at index ${index}`);
    this.tensor = tensor;
    this.index = index;
  }
}

export class HashMismatchError extends WorkloadError {
  expected: string;
  actual: string;
  constructor(expected: string, actual: string) {
    super("HASH_MISMATCH", `blob content hash ${actual} does not match requested ${expected}`);
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * Something is stored under the name, but not a blob anyone can read: a directory, a FIFO or another non-file, or
 * more bytes than the reader's bound (the reporter controls its own blob, so this is an answer about the
 * content, never a store outage; the verifier refuses it after the same grace as a missing blob).
 */
export class UnreadableBlobError extends WorkloadError {
  constructor(name: string, why: string) {
    super("UNREADABLE_BLOB", `the object under ${name} cannot be read as a blob: ${why}`);
  }
}

export class NotFoundError extends WorkloadError {
  constructor(hash: string) {
    super("NOT_FOUND", `no blob stored under ${hash}`);
  }
}

const PROVIDER_HINT: Record<string, string> = {
  cuda: "Use 'cpu', or install onnxruntime-node with CUDA binaries on a GPU machine.",
  webgpu: "Use 'cpu', or install the Vulkan loader (libvulkan1) and the GPU's Vulkan driver.",
};

export class ExecutionProviderError extends WorkloadError {
  constructor(provider: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      "EXECUTION_PROVIDER_UNAVAILABLE",
      `execution provider '${provider}' is not available in this onnxruntime-node build/machine ` +
        `(${detail}). ${PROVIDER_HINT[provider] ?? "Use 'cpu'."}`,
    );
  }
}

export class StepOrderError extends WorkloadError {
  constructor(stateStep: number, step: number) {
    super("STEP_ORDER", `step ${step} must follow state at step ${step - 1}, got state at step ${stateStep}`);
  }
}
