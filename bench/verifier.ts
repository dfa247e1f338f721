// The Quality Guard's cost and detection. `node bench/verifier.ts` prints `name: value` lines.
//
// verifier_compute_ratio_<template>: CPU time one honest verifier spends checking a job's checkpoints (blob reads,
// decoding, hash-chain checks, replay of the sampled steps plus the last one, held-out evaluation) divided by the
// CPU time the trainer spent computing those checkpoints' steps, at the checkpoint interval the demo uses
// (`npm start`: 100 steps for mnist-mlp, 20 for blobs-tiny) and the verifier's default sample budget (whole
// segments of the template default length, workloads/segments.ts). Both are
// process CPU time (process.cpuUsage) on this machine with onnxruntime's single-threaded settings. Training time
// counts the trainer's steps only (not the agent's hashing and uploads), so the ratio errs high.
// `_sampled_only` leaves out checkpoints whose evaluation escalated to a full replay (the evaluation rule broken:
// with its false-alarm rate of 10⁻⁴, verifier/checks.ts, honest work should never be); `verifier_full_replays_<t>`
// counts those. `verifier_cpu_ms_per_checkpoint_<t>_{replay,eval,load}` split the verifier's CPU time: replaying
// steps, held-out evaluation, and the rest (reading, hashing and decoding blobs, the hash-chain checks).
// Detection figures come from the same engine as test/verifier/detectionMatrix.ts (the 2-of-3 quorum with fault
// claims, test/verifier/matrix.ts), on other seeds and more of them.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { honestUpload, type SegmentStart } from "../agent/segment.ts";
import {
  createTrainer,
  FsCheckpointStore,
  initialState,
  loadTemplate,
  ZERO_HASH,
  type TrainingState,
  workSeed,
} from "../workloads/index.ts";
import { cpuMsSince, newVerifyCache, verifyCheckpoint } from "../verifier/checks.ts";
import { DEFAULT_CONFIG } from "../verifier/verifier.ts";
import { Provider, seedOf } from "../test/verifier/helpers.ts";
import { CERTAIN_CASES, runMatrix, SAMPLING_CASES } from "../test/verifier/matrix.ts";
import { TEST_MAKER, TEST_PROFILE } from "../test/verifier/helpers.ts";

/** The demo's jobs: `npm start` (600 MNIST steps, a checkpoint every 100) and `npm start -- --quick` (120, 20). */
const RATIO_RUNS = [
  { template: "mnist-mlp", interval: 100, checkpoints: 6 },
  { template: "blobs-tiny", interval: 20, checkpoints: 6 },
];

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Trains `checkpoints` honest checkpoints (training CPU measured), then verifies each (verifier CPU measured). */
export async function computeRatio(name: string, interval: number, checkpoints: number) {
  const template = loadTemplate(name);
  const trainer = await createTrainer(template);
  const dir = await mkdtemp(join(tmpdir(), "gpuchain-bench-verifier-"));
  const store = new FsCheckpointStore(dir);
  const provider = new Provider(trainer, store);
  try {
    const seed = seedOf(424242);
    // Warm-up (not measured): onnxruntime's first runs allocate.
    let warm = initialState(template, seed);
    for (let i = 0; i < 5; i++) warm = (await trainer.trainStep(warm, seed, warm.step + 1)).state;
    await trainer.evaluate(warm);

    let trainingCpuMs = 0;
    const reports = [];
    let start: SegmentStart = {
      templateId: template.templateId,
      seed,
      prevCheckpointHash: ZERO_HASH,
      maker: TEST_MAKER,
      profile: TEST_PROFILE,
      start: initialState(template, seed),
    };
    for (let c = 0; c < checkpoints; c++) {
      const states: TrainingState[] = [];
      let s = start.start;
      const t0 = process.cpuUsage();
      for (let i = 0; i < interval; i++) {
        s = (await trainer.trainStep(s, workSeed(seed, TEST_MAKER), s.step + 1)).state;
        states.push(s);
      }
      const segmentCpuMs = cpuMsSince(t0);
      trainingCpuMs += segmentCpuMs;
      const report = await provider.put(honestUpload({ ...start, states, trainedSteps: interval, loss: 0 }));
      reports.push({
        report,
        acceptedStep: start.start.step,
        acceptedHash: start.prevCheckpointHash,
        trainingCpuMs: segmentCpuMs,
      });
      start = { ...start, prevCheckpointHash: report.hash, start: s };
    }

    let verifierCpuMs = 0;
    let sampledOnlyCpuMs = 0;
    let sampledOnlyTrainingCpuMs = 0;
    let estimatedTrainingCpuMs = 0;
    let fullReplays = 0;
    let replayedSteps = 0;
    let replayCpuMs = 0;
    let evalCpuMs = 0;
    const cache = newVerifyCache();
    for (const [i, r] of reports.entries()) {
      const v = await verifyCheckpoint({
        template,
        trainer,
        store,
        cache,
        report: r.report,
        samples: DEFAULT_CONFIG.samples,
        sampleSalt: seedOf(900 + i),
        job: { seed, templateId: template.templateId, acceptedStep: r.acceptedStep, acceptedHash: r.acceptedHash },
      });
      if (!v.accept) throw new Error(`bench: honest checkpoint refused: ${v.reasons.join("; ")}`);
      verifierCpuMs += v.metrics.cpuMs;
      replayCpuMs += v.metrics.replayCpuMs ?? 0;
      evalCpuMs += v.metrics.evalCpuMs ?? 0;
      if (!v.metrics.fullReplay) replayedSteps += v.metrics.replayedSteps;
      estimatedTrainingCpuMs += v.metrics.trainingCpuMsEstimate ?? 0;
      if (v.metrics.fullReplay) {
        fullReplays++;
      } else {
        sampledOnlyCpuMs += v.metrics.cpuMs;
        sampledOnlyTrainingCpuMs += r.trainingCpuMs;
      }
    }
    return {
      [`verifier_compute_ratio_${name}`]: round(verifierCpuMs / trainingCpuMs),
      [`verifier_compute_ratio_${name}_sampled_only`]: round(sampledOnlyCpuMs / sampledOnlyTrainingCpuMs),
      [`verifier_compute_ratio_${name}_self_estimate`]: round(verifierCpuMs / estimatedTrainingCpuMs),
      [`verifier_full_replays_${name}`]: fullReplays,
      [`verifier_checkpoints_${name}`]: checkpoints,
      [`verifier_cpu_ms_per_checkpoint_${name}`]: round(verifierCpuMs / checkpoints, 2),
      [`verifier_cpu_ms_per_checkpoint_${name}_replay`]: round(replayCpuMs / checkpoints, 2),
      [`verifier_cpu_ms_per_checkpoint_${name}_eval`]: round(evalCpuMs / checkpoints, 2),
      [`verifier_cpu_ms_per_checkpoint_${name}_load`]: round(
        (verifierCpuMs - replayCpuMs - evalCpuMs) / checkpoints,
        2,
      ),
      [`training_cpu_ms_per_checkpoint_${name}`]: round(trainingCpuMs / checkpoints, 2),
      [`verifier_checkpoint_interval_${name}`]: interval,
      // Whole segments for the sample budget plus the last step (workloads/segments.ts), sampled checks only.
      [`verifier_replayed_steps_per_checkpoint_${name}`]: round(
        replayedSteps / Math.max(1, checkpoints - fullReplays),
        2,
      ),
    };
  } finally {
    await trainer.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Detection by a 2-of-3 quorum of independently sampling verifiers with fault claims, blobs-tiny, interval 20,
 * k = 3: every certain class, 200 honest checkpoints (target ≥ 200), and 200 checkpoints with one bad step among 20.
 */
async function detection(): Promise<Record<string, number>> {
  const base = { template: "blobs-tiny", interval: 20, samples: 3 };
  const certain = await runMatrix({ ...base, cases: CERTAIN_CASES, trials: 2, seedBase: 50_000 });
  const honest = await runMatrix({ ...base, cases: ["honest"], trials: 200, seedBase: 60_000 });
  const sampling = await runMatrix({ ...base, cases: SAMPLING_CASES, trials: 100, seedBase: 70_000 });
  const sum = (rows: typeof certain, f: (r: (typeof certain)[number]) => number) => rows.reduce((a, r) => a + f(r), 0);
  const pct = (x: number) => round(100 * x, 2);
  const samples = sum(sampling, (r) => r.trials);
  return {
    verifier_detection_rate_certain_faults_pct: pct(
      sum(certain, (r) => r.quorumRefusals) / sum(certain, (r) => r.trials),
    ),
    verifier_certain_fault_checkpoints: sum(certain, (r) => r.trials),
    // Provable faults (a replay that does not reproduce) slash; a blob that does not hash to the report never does.
    verifier_certain_fault_slashes: sum(certain, (r) => r.slashes),
    verifier_hash_mismatch_slashes: sum(
      certain.filter((r) => r.kind === "hash-mismatch"),
      (r) => r.slashes,
    ),
    honest_checkpoints: sum(honest, (r) => r.trials),
    false_refusals: sum(honest, (r) => r.quorumRefusals),
    verifier_false_refusals_honest: sum(honest, (r) => r.verifierRefusals),
    verifier_honest_checks: sum(honest, (r) => r.checks),
    honest_slashes: sum(honest, (r) => r.slashes),
    honest_escalations: sum(honest, (r) => r.escalations),
    verifier_one_bad_step_in_20_caught_per_verifier_pct: pct(
      sum(sampling, (r) => r.verifierRefusals) / sum(sampling, (r) => r.checks),
    ),
    verifier_one_bad_step_in_20_expected_per_verifier_pct: pct(sampling[0].expectedVerifierRate!),
    quorum_refusal_one_bad_step_pct: pct(sum(sampling, (r) => r.quorumRefusals) / samples),
    quorum_refusal_one_bad_step_expected_pct: pct(sampling[0].expectedAnyRate!),
    quorum_refusal_one_bad_step_samples: samples,
    quorum_refusal_one_bad_step_slashed_pct: pct(sum(sampling, (r) => r.slashes) / samples),
    // Before fault claims: two independent catches were needed.
    quorum_refusal_one_bad_step_without_claims_pct: pct(sum(sampling, (r) => r.independentQuorumRefusals) / samples),
    quorum_refusal_one_bad_step_without_claims_expected_pct: pct(sampling[0].expectedQuorumRate!),
  };
}

export async function benchVerifier(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const r of RATIO_RUNS) Object.assign(out, await computeRatio(r.template, r.interval, r.checkpoints));
  Object.assign(out, await detection());
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [k, v] of Object.entries(await benchVerifier())) console.log(`${k}: ${v}`);
}
