// Training throughput of every workload template on this machine's CPU (1 onnxruntime thread), and
// what the portable arithmetic costs against ordinary float graphs (MatMul/Softmax kernels, kept in
// bench/legacyGraphs.ts for comparison only): per template, side by side in one run.
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

/**
 * The two formulations' trainers open side by side, taking turns of at least TURN_MS of steps for ROUNDS rounds, so
 * both see the same load at nearly the same moment (this machine's neighbours move a step's wall time by ±30 %
 * within minutes). Per side: the median ms per step over the turns. The ratio: the median over rounds of each
 * round's own ratio (paired), by wall time and by this process's CPU time (which a neighbour's load stretches
 * less than the wall clock).
 */
const portableVsLegacy = (t: Template) => alternating(t, legacy(t));
const integerVsTree = (t: Template, tree: Template) => alternating(t, tree);

const ROUNDS = 21;
const TURN_MS = 250;
const WARMUP_TURNS = 3; // onnxruntime's arena and the caches settle in the first steps

type Comparison = { portable: number; legacy: number; ratio: number; cpuRatio: number };

async function alternating(t: Template, other: Template): Promise<Comparison> {
  const sides = await Promise.all([t, other].map((x) => createTrainer(x)));
  try {
    const states = sides.map((tr) => tr.initialState(SEED));
    const turn = async (i: number): Promise<{ wall: number; cpu: number }> => {
      const [t0, c0] = [performance.now(), process.cpuUsage()];
      let steps = 0;
      do {
        states[i] = (await sides[i].trainStep(states[i], SEED, states[i].step + 1)).state;
        steps++;
      } while (performance.now() - t0 < TURN_MS);
      const c = process.cpuUsage(c0);
      return { wall: (performance.now() - t0) / steps, cpu: (c.user + c.system) / 1000 / steps };
    };
    for (let i = 0; i < WARMUP_TURNS; i++) {
      await turn(0);
      await turn(1);
    }
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push([await turn(0), await turn(1)]);
    return {
      portable: median(rounds.map(([a]) => a.wall)),
      legacy: median(rounds.map(([, b]) => b.wall)),
      ratio: median(rounds.map(([a, b]) => a.wall / b.wall)),
      cpuRatio: median(rounds.map(([a, b]) => a.cpu / b.cpu)),
    };
  } finally {
    await Promise.all(sides.map((tr) => tr.close()));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

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
    const { portable, legacy: float, ratio, cpuRatio } = await portableVsLegacy(t);
    out[`portable_step_ms_${name}`] = round(portable);
    out[`float_step_ms_${name}`] = round(float);
    out[`portable_step_overhead_${name}`] = round(ratio); // target ≤ 1.5
    out[`portable_step_overhead_cpu_${name}`] = round(cpuRatio);
    out[`train_steps_per_second_${name}`] = round(1000 / portable);
    const [mine, theirs] = [await heldoutAfter(t, 600), await heldoutAfter(legacy(t), 600)];
    out[`heldout_accuracy_600_steps_${name}`] = round3(mine.accuracy);
    out[`float_heldout_accuracy_600_steps_${name}`] = round3(theirs.accuracy);
    out[`heldout_loss_600_steps_${name}`] = round3(mine.loss);
    out[`float_heldout_loss_600_steps_${name}`] = round3(theirs.loss);
  }
  if (names && !names.includes("mnist-mlp")) return out;
  // what the integer products replaced: the elementwise float tree (the first portable products)
  const mnist = loadTemplate("mnist-mlp");
  const tree = buildTemplate({ ...mnist.descriptor, arithmetic: undefined });
  const { legacy: treeMs, ratio } = await integerVsTree(mnist, tree);
  out["tree_step_ms_mnist-mlp"] = round(treeMs);
  out["integer_speedup_over_tree_mnist-mlp"] = round(1 / ratio);
  out["step_peak_memory_mib_mnist-mlp"] = round(stepMemoryInChild("mnist-mlp"));
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === "--step-memory") console.log(await stepMemoryMiB(process.argv[3]));
  else for (const [k, v] of Object.entries(await benchWorkloads())) console.log(`${k}: ${v}`);
}
