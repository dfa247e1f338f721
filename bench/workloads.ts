// Training throughput of every workload template on this machine's CPU (1 onnxruntime thread), and
// what the portable arithmetic costs against ordinary float graphs (MatMul/Softmax kernels, kept in
// bench/legacyGraphs.ts for comparison only): per template, side by side in one run (issue 20).
// `node bench/workloads.ts` prints `name: value` lines.
import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import {
  buildTemplate,
  createTrainer,
  listTemplates,
  loadTemplate,
  stateHash,
  type Template,
} from "../workloads/index.ts";
import { buildGraphs as legacyGraphs } from "./legacyGraphs.ts";

const SEED = "0x" + "5e".repeat(32);
const WARMUP_STEPS = 10;
const MEASURE_MS = 1500;

/** Logical steps per second, measured for ~MEASURE_MS after a short warm-up. */
async function stepsPerSecond(t: Template, microBatchAtoms?: number): Promise<number> {
  const tr = await createTrainer(t, { microBatchAtoms });
  try {
    let s = tr.initialState(SEED);
    for (let i = 0; i < WARMUP_STEPS; i++) s = (await tr.trainStep(s, SEED, s.step + 1)).state;
    const t0 = performance.now();
    let steps = 0;
    while (performance.now() - t0 < MEASURE_MS) {
      s = (await tr.trainStep(s, SEED, s.step + 1)).state;
      steps++;
    }
    return steps / ((performance.now() - t0) / 1000);
  } finally {
    await tr.close();
  }
}

/** Milliseconds to hash one training state (done once per step by the agent). */
async function stateHashMs(t: Template): Promise<number> {
  const tr = await createTrainer(t);
  const s = tr.initialState(SEED);
  await tr.close();
  const n = 50;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) stateHash(s);
  return (performance.now() - t0) / n;
}

const round = (x: number) => Math.round(x * 100) / 100;

/** The same template with the former (kernel-dependent) graphs, for comparison only. */
const legacy = (t: Template): Template => ({ ...t, graphs: legacyGraphs(t.descriptor) });

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Median ms per logical step over `rounds` alternating rounds of portable vs float (same load for both). */
const portableVsLegacy = (t: Template, rounds = 5) => alternating(t, legacy(t), rounds);
const integerVsTree = (t: Template, tree: Template) => alternating(t, tree, 5);

async function alternating(
  t: Template,
  other: Template,
  rounds: number,
): Promise<{ portable: number; legacy: number }> {
  const ms = { portable: [] as number[], legacy: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    ms.portable.push(1000 / (await stepsPerSecond(t)));
    ms.legacy.push(1000 / (await stepsPerSecond(other)));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { portable: median(ms.portable), legacy: median(ms.legacy) };
}

/**
 * MiB a full-batch step adds to the process's resident memory, in a fresh process: onnxruntime's
 * arena keeps its high-water mark, so the growth over the first steps is the step's peak.
 */
async function stepMemoryMiB(name: string): Promise<number> {
  const tr = await createTrainer(loadTemplate(name));
  let s = tr.initialState(SEED);
  (globalThis as { gc?: () => void }).gc?.();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < 3; i++) s = (await tr.trainStep(s, SEED, s.step + 1)).state;
  const grown = process.memoryUsage().rss - before;
  await tr.close();
  return grown / 2 ** 20;
}

/** Held-out metric after the usual 600-step job (what `npm start` trains). */
async function heldoutAfter(t: Template, steps: number): Promise<{ loss: number; accuracy: number }> {
  const tr = await createTrainer(t);
  try {
    let s = tr.initialState(SEED);
    while (s.step < steps) s = (await tr.trainStep(s, SEED, s.step + 1)).state;
    return await tr.evaluate(s);
  } finally {
    await tr.close();
  }
}

function stepMemoryInChild(name: string): number {
  const out = execFileSync(process.execPath, ["--expose-gc", import.meta.filename, "--step-memory", name]);
  return Number(out.toString().trim());
}

/** `names`: only these templates' figures (and the MLP's comparisons only with mnist-mlp among them). */
export async function benchWorkloads(names?: string[]): Promise<Record<string, number>> {
  const templates = listTemplates().filter((t) => !names || names.includes(t.descriptor.name));
  const out: Record<string, number> = {};
  for (const t of templates) {
    const name = t.descriptor.name;
    out[`agent_steps_per_second_${name}`] = round(await stepsPerSecond(t));
    out[`agent_steps_per_second_${name}_capped_1_atom`] = round(await stepsPerSecond(t, 1));
    out[`state_hash_ms_${name}`] = round(await stateHashMs(t));
  }
  for (const t of templates) {
    const name = t.descriptor.name;
    const { portable, legacy: float } = await portableVsLegacy(t);
    out[`portable_step_ms_${name}`] = round(portable);
    out[`float_step_ms_${name}`] = round(float);
    out[`portable_step_overhead_${name}`] = round(portable / float); // target ≤ 1.5
    out[`train_steps_per_second_${name}`] = round(1000 / portable);
    const [mine, theirs] = [await heldoutAfter(t, 600), await heldoutAfter(legacy(t), 600)];
    out[`heldout_accuracy_600_steps_${name}`] = round3(mine.accuracy);
    out[`float_heldout_accuracy_600_steps_${name}`] = round3(theirs.accuracy);
    out[`heldout_loss_600_steps_${name}`] = round3(mine.loss);
    out[`float_heldout_loss_600_steps_${name}`] = round3(theirs.loss);
  }
  if (names && !names.includes("mnist-mlp")) return out;
  // what the integer products replaced: the elementwise float tree (issue 12's portable products)
  const mnist = loadTemplate("mnist-mlp");
  const tree = buildTemplate({ ...mnist.descriptor, arithmetic: undefined });
  const { portable: integer, legacy: treeMs } = await integerVsTree(mnist, tree);
  out["tree_step_ms_mnist-mlp"] = round(treeMs);
  out["integer_speedup_over_tree_mnist-mlp"] = round(treeMs / integer);
  out["step_peak_memory_mib_mnist-mlp"] = round(stepMemoryInChild("mnist-mlp"));
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === "--step-memory") console.log(await stepMemoryMiB(process.argv[3]));
  else for (const [k, v] of Object.entries(await benchWorkloads())) console.log(`${k}: ${v}`);
}
