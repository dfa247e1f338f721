/**
 * Issue 19's figures: does cheating pay against the deployed verifiers? `cheat_ev_worst_usdc_per_checkpoint` from
 * the Monte Carlo over the real sampling code (verifier/economics.ts), and `lazy_provider_paid_pct_interval_<I>`
 * from real verifications (onnxruntime replays) of lazy checkpoints: every step but the last is the accepted state
 * relabelled, the last is trained from it, every boundary state stored (so decoding, chain-start and chain-gap pass).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { honestUpload, type Upload } from "../agent/segment.ts";
import { putUpload } from "../agent/blobs.ts";
import type { JobFacts } from "../verifier/checks.ts";
import { DEPLOYMENT, randomSalt, simulateCheats } from "../verifier/economics.ts";
import {
  createTrainer,
  FsCheckpointStore,
  initialState,
  loadTemplate,
  ZERO_HASH,
  type CheckpointStore,
  type Template,
  type Trainer,
  type TrainingState,
  workSeed,
} from "../workloads/index.ts";
import { localProfile } from "../workloads/profile.ts";
import { mulberry32 } from "../test/helpers/random.ts";
import { checkerFor } from "../test/verifier/helpers.ts";

/** The lazy provider's upload for steps 0..n of a fresh job: one trained step, n − 1 relabelled copies. */
export async function lazyUpload(trainer: Trainer, seed: string, n: number, maker: string): Promise<Upload> {
  const start = initialState(trainer.template, seed);
  const states: TrainingState[] = [];
  for (let step = 1; step < n; step++) states.push({ ...start, step });
  // The one trained step, on the maker's own data order: the always-replayed last step reproduces.
  const last = await trainer.trainStep(states[states.length - 1] ?? start, workSeed(seed, maker), n);
  states.push(last.state);
  return honestUpload({
    templateId: trainer.template.templateId,
    seed,
    prevCheckpointHash: ZERO_HASH,
    start,
    maker,
    profile: localProfile(),
    states,
    trainedSteps: 1,
    loss: 0,
  });
}

/**
 * Of `trials` lazy checkpoints at interval n, the share a 2-of-3 quorum of honest verifiers (each with its own
 * secret salt) would accept, in per cent.
 */
export async function lazyPaidPct(
  template: Template,
  trainer: Trainer,
  store: CheckpointStore,
  n: number,
  trials: number,
  rand: () => number,
): Promise<{ paidPct: number; refusedCodes: Set<string> }> {
  const maker = "0x" + "5a".repeat(20);
  let paid = 0;
  const refusedCodes = new Set<string>();
  for (let t = 0; t < trials; t++) {
    const seed = randomSalt(rand);
    const u = await lazyUpload(trainer, seed, n, maker);
    await putUpload(store, u);
    const job: JobFacts = { seed, templateId: template.templateId, acceptedStep: 0, acceptedHash: ZERO_HASH };
    let accepts = 0;
    const check = checkerFor(trainer, store, DEPLOYMENT.samples);
    for (let v = 0; v < DEPLOYMENT.verifiers; v++) {
      const verdict = await check(job, { step: n, hash: u.reportedHash, provider: maker }, randomSalt(rand));
      if (verdict.accept) accepts++;
      else verdict.codes.forEach((c) => refusedCodes.add(c));
    }
    if (accepts >= 2) paid++;
  }
  return { paidPct: (100 * paid) / trials, refusedCodes };
}

export async function benchCheat(): Promise<Record<string, number | string>> {
  const { rows, worst } = simulateCheats(400, mulberry32(19));
  const lazy = (n: number) => rows.find((r) => r.strategy === "lazy" && r.interval === n)!;
  const out: Record<string, number | string> = {
    cheat_ev_worst_usdc_per_checkpoint: round(Math.max(worst.ev, worst.evOneColluding)),
    cheat_ev_worst_strategy: `${worst.strategy}-f${worst.fabricated}-interval-${worst.interval}`,
    cheat_ev_worst_three_honest_usdc_per_checkpoint: round(Math.max(...rows.map((r) => r.ev))),
    cheat_strategies_tried: rows.length,
    lazy_caught_pct_interval_1000_simulated: round(100 * lazy(1000).caught),
  };
  const template = loadTemplate("blobs-tiny");
  const dir = await mkdtemp(join(tmpdir(), "gpuchain-bench-cheat-"));
  const trainer = await createTrainer(template);
  try {
    const store = new FsCheckpointStore(join(dir, "store"));
    for (const n of [100, 500, 1000]) {
      const { paidPct } = await lazyPaidPct(template, trainer, store, n, 200, mulberry32(n));
      out[`lazy_provider_paid_pct_interval_${n}`] = paidPct;
    }
    out.lazy_provider_trials_per_interval = 200;
  } finally {
    await trainer.close();
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;
