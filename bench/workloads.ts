// Training throughput of every workload template on this machine's CPU (1 onnxruntime thread).
// `node bench/workloads.ts` prints `name: value` lines.
import { pathToFileURL } from "node:url";
import { createTrainer, listTemplates, stateHash, type Template } from "../workloads/index.ts";

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

export async function benchWorkloads(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of listTemplates()) {
    const name = t.descriptor.name;
    out[`agent_steps_per_second_${name}`] = round(await stepsPerSecond(t));
    out[`agent_steps_per_second_${name}_capped_1_atom`] = round(await stepsPerSecond(t, 1));
    out[`state_hash_ms_${name}`] = round(await stateHashMs(t));
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [k, v] of Object.entries(await benchWorkloads())) console.log(`${k}: ${v}`);
}
