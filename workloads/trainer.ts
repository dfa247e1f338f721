// The trainer: runs logical steps as micro-batches of atoms through the template's ONNX graphs.
import { gather, labelDims, loadDatasetAsync } from "./data.ts";
import { StepOrderError } from "./errors.ts";
import { atomLosses } from "./loss.ts";
import { GROUP_ELEMENTS } from "./onnx/exact.ts";
import { batchIndices } from "./order.ts";
import { createSession, f32, type ExecutionProvider, type Feeds } from "./runtime.ts";
import { checkStateShape, initialState } from "./state.ts";
import type { NamedTensor, Template, TrainingState } from "./types.ts";

export type TrainerOptions = { executionProvider?: ExecutionProvider; microBatchAtoms?: number };
/** Fault hooks for tests and demos. dataSeedOverride: draw the batch from another seed (wrong data). */
export type StepOptions = { dataSeedOverride?: string };
export type StepResult = { state: TrainingState; loss: number };
/** Held-out loss and accuracy; a text template also gives each held-out window's mean loss. */
export type EvalResult = { loss: number; accuracy: number; windowLoss?: Float32Array };

/** An evaluation graph's outputs as an EvalResult. */
export function evalResultOf(out: Record<string, { data: unknown }>): EvalResult {
  const r: EvalResult = { loss: (out.loss.data as Float32Array)[0], accuracy: (out.accuracy.data as Float32Array)[0] };
  if (out.window_loss) r.windowLoss = out.window_loss.data as Float32Array;
  return r;
}

export type Trainer = {
  template: Template;
  executionProvider: ExecutionProvider;
  microBatchAtoms: number;
  initialState(seed: string): TrainingState;
  trainStep(state: TrainingState, seed: string, step: number, opts?: StepOptions): Promise<StepResult>;
  evaluate(state: TrainingState): Promise<EvalResult>;
  close(): Promise<void>;
};

const BYTES = 4;
/** Product groups and partial sums of a contraction's depth-first Add tree alive at once (≈ log₂ groups + 2). */
const PRODUCTS_ALIVE = 8;
const count = (dims: number[]) => dims.reduce((a, b) => a * b, 1);

/** Bytes of tensors one step holds with m atoms per micro-batch (onnxruntime's own overhead excluded). */
export function stepMemoryBytes(t: Template, m: number): number {
  const params = t.params.reduce((s, p) => s + count(p.dims), 0);
  const d = t.descriptor;
  const fixed = 5 * params * BYTES; // weights, momentum, accumulator, new weights, new momentum
  // per atom: two copies of its gradients (graph output + Scan input), its samples' activations (the family's
  // estimate), and its share of the product groups alive in a contraction (sized for a full batch: onnx/exact.ts)
  const products = (PRODUCTS_ALIVE * GROUP_ELEMENTS) / t.atomsPerStep;
  const perAtom = (2 * params + d.atomSize * t.family.activationFloatsPerSample(d) + products) * BYTES;
  return fixed + m * perAtom;
}

/** The least device memory the template trains in, MiB: a step of one-atom micro-batches. */
export const oneAtomMemoryMiB = (t: Template): number => Math.ceil(stepMemoryBytes(t, 1) / 2 ** 20);

/** Largest micro-batch (in atoms, a divisor of atomsPerStep) whose step fits in memoryMiB. */
export function microBatchForMemory(t: Template, memoryMiB: number): number {
  const cap = memoryMiB * 1024 * 1024;
  for (let m = t.atomsPerStep; m >= 1; m--) {
    if (t.atomsPerStep % m === 0 && stepMemoryBytes(t, m) <= cap) return m;
  }
  throw new RangeError(`${t.descriptor.name} needs ${stepMemoryBytes(t, 1)} bytes per step; cap is ${cap}`);
}

function toFeeds(ts: NamedTensor[], prefix = ""): Feeds {
  const feeds: Feeds = {};
  for (const t of ts) feeds[prefix + t.name] = f32(t.data, t.dims);
  return feeds;
}

function zeros(t: Template, prefix: string): Feeds {
  const feeds: Feeds = {};
  for (const p of t.params) feeds[prefix + p.name] = f32(new Float32Array(count(p.dims)), p.dims);
  return feeds;
}

export async function createTrainer(t: Template, opts: TrainerOptions = {}): Promise<Trainer> {
  const provider = opts.executionProvider ?? "cpu";
  const m = opts.microBatchAtoms ?? t.atomsPerStep;
  if (!Number.isInteger(m) || m < 1 || m > t.atomsPerStep) {
    throw new RangeError(`microBatchAtoms must be an integer in 1..${t.atomsPerStep}, got ${m}`);
  }
  const d = t.descriptor;
  const ds = await loadDatasetAsync(d.data);
  const F = ds.features;
  const Y = ds.classes * ds.targetsPerSample; // label floats per sample
  // One at a time: an unavailable provider then fails once, on the first session.
  const grad = await createSession(t.graphs.gradient, provider);
  const reduce = await createSession(t.graphs.reduce, provider);
  const update = await createSession(t.graphs.update, provider);
  const evaluate = await createSession(t.graphs.evaluate, provider);
  const heldout = gather(
    ds,
    ds.heldoutX,
    ds.heldoutY,
    Array.from({ length: ds.heldoutCount }, (_, i) => i),
  );
  const heldoutFeeds = { x: f32(heldout.x, [ds.heldoutCount, F]), y: f32(heldout.y, labelDims(ds, [ds.heldoutCount])) };

  /** Sums every atom's gradient into one accumulator, atom 0 first, and collects atom losses. */
  async function gradientSum(w: Feeds, x: Float32Array, y: Float32Array): Promise<{ acc: Feeds; losses: number[] }> {
    let acc = zeros(t, "acc_");
    const losses: number[] = [];
    const S = d.atomSize;
    for (let a0 = 0; a0 < t.atomsPerStep; a0 += m) {
      const A = Math.min(m, t.atomsPerStep - a0);
      const labels = y.slice(a0 * S * Y, (a0 + A) * S * Y);
      const out = await grad.run({
        ...w,
        x: f32(x.slice(a0 * S * F, (a0 + A) * S * F), [A, S, F]),
        y: f32(labels, labelDims(ds, [A, S])),
      });
      losses.push(...atomLosses(out, labels, A));
      const feeds: Feeds = { ...acc };
      for (const p of t.params) feeds[`g_${p.name}`] = out[`g_${p.name}`];
      const sums = await reduce.run(feeds);
      acc = {};
      for (const p of t.params) acc[`acc_${p.name}`] = sums[`sum_${p.name}`];
    }
    return { acc, losses };
  }

  async function trainStep(
    state: TrainingState,
    seed: string,
    step: number,
    so: StepOptions = {},
  ): Promise<StepResult> {
    if (step !== state.step + 1) throw new StepOrderError(state.step, step);
    checkStateShape(t, state);
    const idx = batchIndices(t, so.dataSeedOverride ?? seed, step);
    const { x, y } = gather(ds, ds.trainX, ds.trainY, idx);
    const { acc, losses } = await gradientSum(toFeeds(state.weights), x, y);
    const feeds: Feeds = { ...toFeeds(state.weights, "w_"), ...toFeeds(state.momentum, "m_") };
    if (d.lrHalvingSteps) feeds.lr = f32(Float32Array.of(learningRate(t, step)), []);
    for (const p of t.params) feeds[`g_${p.name}`] = acc[`acc_${p.name}`];
    const out = await update.run(feeds);
    const pick = (prefix: string): NamedTensor[] =>
      t.params.map((p) => ({ name: p.name, dims: p.dims.slice(), data: out[prefix + p.name].data as Float32Array }));
    // Reported loss only (not part of the state): mean of atom losses, summed in atom order.
    const loss = losses.reduce((s, v) => s + v, 0) / losses.length;
    return { state: { step, weights: pick("new_w_"), momentum: pick("new_m_") }, loss };
  }

  async function evaluateState(state: TrainingState): Promise<EvalResult> {
    checkStateShape(t, state);
    return evalResultOf(await evaluate.run({ ...toFeeds(state.weights), ...heldoutFeeds }));
  }

  return {
    template: t,
    executionProvider: provider,
    microBatchAtoms: m,
    initialState: (seed) => initialState(t, seed),
    trainStep,
    evaluate: evaluateState,
    close: async () => {
      await Promise.all([grad, reduce, update, evaluate].map((s) => s.release()));
    },
  };
}

/** The rate of a logical step: lr·2^−⌊(step−1)/lrHalvingSteps⌋ — float32(lr) times a power of two, exact everywhere. */
export function learningRate(t: Template, step: number): number {
  const d = t.descriptor;
  const halvings = d.lrHalvingSteps ? Math.floor((step - 1) / d.lrHalvingSteps) : 0;
  return Math.fround(d.lr) * 2 ** -Math.min(halvings, 100);
}

/** Verifier entry point: recompute step `step` from the committed state before it. */
export async function replayStep(tr: Trainer, prev: TrainingState, seed: string, step: number): Promise<TrainingState> {
  return (await tr.trainStep(prev, seed, step)).state;
}
