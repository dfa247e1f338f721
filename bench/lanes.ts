// Rounds and lanes, simulated on one machine: K = 1, 2, 4 lanes at equal total inner steps, trained with
// the real trainer (onnxruntime sessions, the real data) and merged by workloads/merge.ts. The lanes of a round run
// one after another here; on the network they run on K machines at once.
// K = 1 is today's job (outer lr 1, momentum 0: the plain run); K > 1 uses DiLoCo's outer Nesterov (0.7, 0.9).
// Prints lanes_heldout_<template>_<K> (mnist-cnn: held-out accuracy; char-transformer: held-out loss, nats per
// symbol), lanes_heldout_ratio_<template>_<K> (against K = 1) and lanes_merge_ms_<template> (median of the K = 4
// merges). `node bench/lanes.ts` runs it alone.
import { pathToFileURL } from "node:url";
import { createTrainer, loadTemplate } from "../workloads/index.ts";
import { runRound, type LaneJob } from "../workloads/lanes.ts";
import { initialOuterState, outerParamsFor } from "../workloads/merge.ts";

const SEED = "0x" + "36".repeat(32);
const MAKERS = Array.from({ length: 8 }, (_, k) => "0x" + (k + 1).toString(16).padStart(2, "0").repeat(20));
/** Total inner steps of every run (K lanes × H × rounds), and the inner length H of a round. */
export const TOTAL_STEPS = 600;
export const INNER_STEPS = 25;
export const LANE_COUNTS = [1, 2, 4];
/** The held-out figure: accuracy for the classifier, loss for the language model. */
export const LANE_TEMPLATES: { name: string; metric: "accuracy" | "loss" }[] = [
  { name: "mnist-cnn", metric: "accuracy" },
  { name: "char-transformer", metric: "loss" },
];

const median = (xs: number[]) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x: number, digits: number) => Number(x.toFixed(digits));

export async function benchLanes(progress: (line: string) => void = () => {}): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { name, metric } of LANE_TEMPLATES) {
    const t = loadTemplate(name);
    const tr = await createTrainer(t);
    try {
      out[`lanes_total_steps_${name}`] = TOTAL_STEPS;
      out[`lanes_inner_steps_${name}`] = INNER_STEPS;
      let base = NaN;
      for (const K of LANE_COUNTS) {
        const job: LaneJob = { seed: SEED, lanes: K, innerSteps: INNER_STEPS, outer: outerParamsFor(K) };
        const rounds = TOTAL_STEPS / (K * INNER_STEPS);
        let state = tr.initialState(SEED);
        let outer = initialOuterState(state, job.outer);
        const merges: number[] = [];
        const t0 = performance.now();
        for (let r = 0; r < rounds; r++) {
          const res = await runRound(tr, job, state, outer, MAKERS.slice(0, K));
          ({ state, outer } = res);
          merges.push(res.mergeMs);
        }
        const trainS = (performance.now() - t0) / 1000;
        const ev = await tr.evaluate(state);
        const value = metric === "accuracy" ? ev.accuracy : ev.loss;
        if (K === 1) base = value;
        out[`lanes_heldout_${name}_${K}`] = round(value, 4);
        out[`lanes_heldout_ratio_${name}_${K}`] = round(value / base, 4);
        out[`lanes_train_s_${name}_${K}`] = round(trainS, 1);
        if (K === Math.max(...LANE_COUNTS)) out[`lanes_merge_ms_${name}`] = round(median(merges), 2);
        progress(
          `lanes ${name} K=${K}: ${rounds} rounds of ${INNER_STEPS} steps a lane, held-out ${metric} ${value.toFixed(4)}, ` +
            `${trainS.toFixed(1)} s, merge median ${median(merges).toFixed(2)} ms`,
        );
      }
    } finally {
      await tr.close();
    }
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [k, v] of Object.entries(await benchLanes((l) => process.stderr.write(`[bench] ${l}\n`))))
    console.log(`${k}: ${v}`);
}
