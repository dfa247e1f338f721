/**
 * Does cheating pay against the deployed verifiers? `cheat_ev_worst_usdc_per_checkpoint` and `…_per_job` from the
 * Monte Carlo over the real sampling code (verifier/economics.ts: every strategy, provider-chosen segment length,
 * three honest verifiers and one colluding, the probation forfeit and the fence); `lazy_provider_paid_pct_interval_<I>`
 * and `partial_fabrication_paid_pct_interval_<I>` from real verifications (onnxruntime replays, claim re-checks) of
 * lazy checkpoints (every step but the last the accepted state relabelled) and of the finding's prefix-then-copy
 * checkpoints (25 % and 50 % of the steps copied as the prefix's last state).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Upload } from "../agent/segment.ts";
import { putUpload } from "../agent/blobs.ts";
import type { JobFacts } from "../verifier/checks.ts";
import {
  COPY_STRATEGIES,
  DEPLOYMENT,
  partialFabrication,
  quorumOutcome,
  randomSalt,
  simulateCheats,
  type CheatRow,
  type Finding,
  type Outcomes,
} from "../verifier/economics.ts";
import type { CheckpointVerdict } from "../verifier/checks.ts";
import { publishEvidence, recheckClaim } from "../verifier/claims.ts";
import { claimMessage, type CheckpointItem } from "../verifier/work.ts";
import { freshJobUpload, prefixCopyUpload, type CopyVariant } from "./fabrication.ts";
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
  return freshJobUpload(trainer, seed, maker, states, 1);
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

/** A verifier's verdict as the quorum model reads it: a fault another verifier reproduced, a plain refusal, accept. */
async function findingOfVerdict(
  v: CheckpointVerdict,
  ctx: { trainer: Trainer; store: CheckpointStore; item: CheckpointItem },
): Promise<Finding> {
  if (v.accept) return "accept";
  if (!v.fault) return "plain";
  await publishEvidence(ctx.store, v.fault);
  const claim = claimMessage(ctx.item, v.fault, "0x" + "0f".repeat(20));
  const r = await recheckClaim({ ...ctx, template: ctx.trainer.template, claim, verifierProfile: localProfile() });
  return r.reproduced ? "fault" : "plain";
}

/**
 * Real verifications (onnxruntime replays, claim re-checks) of `trials` copy-strategy checkpoints at interval n with
 * `share` of the steps fabricated: outcome shares with three honest verifiers and with one colluding.
 */
export async function copyOutcomes(
  trainer: Trainer,
  store: CheckpointStore,
  n: number,
  share: number,
  variant: CopyVariant,
  trials: number,
  rand: () => number,
): Promise<{ honest: Outcomes; oneColluding: Outcomes }> {
  const maker = "0x" + "5a".repeat(20);
  const f = Math.round(share * n);
  const honest = { paid: 0, slashed: 0, refused: 0 };
  const oneColluding = { paid: 0, slashed: 0, refused: 0 };
  for (let t = 0; t < trials; t++) {
    const seed = randomSalt(rand);
    const u = await prefixCopyUpload(trainer, seed, n, n - 1 - f, maker, variant);
    await putUpload(store, u);
    const job: JobFacts = { seed, templateId: trainer.template.templateId, acceptedStep: 0, acceptedHash: ZERO_HASH };
    const item: CheckpointItem = {
      kind: "checkpoint",
      key: u.reportedHash,
      jobId: 1n,
      epoch: 1n,
      step: n,
      hash: u.reportedHash,
      ...job,
      provider: maker,
    };
    const check = checkerFor(trainer, store, DEPLOYMENT.samples);
    const findings: Finding[] = [];
    for (let v = 0; v < DEPLOYMENT.verifiers; v++) {
      const verdict = await check(job, { step: n, hash: u.reportedHash, provider: maker }, randomSalt(rand));
      findings.push(await findingOfVerdict(verdict, { trainer, store, item }));
    }
    honest[quorumOutcome(findings, false)]++;
    oneColluding[quorumOutcome(findings, true)]++;
  }
  const shares = (o: Outcomes): Outcomes => ({
    paid: o.paid / trials,
    slashed: o.slashed / trials,
    refused: o.refused / trials,
  });
  return { honest: shares(honest), oneColluding: shares(oneColluding) };
}

const SIMULATED_TRIALS = 2000;
const REAL_TRIALS = 20;
const pct = (x: number) => round(100 * x, 2);

export async function benchCheat(): Promise<Record<string, number | string>> {
  const { rows, worst, worstJob } = simulateCheats(SIMULATED_TRIALS, mulberry32(19));
  const name = (r: CheatRow) => `${r.strategy}-m${r.segmentSteps}-f${r.fabricated}-interval-${r.interval}`;
  const lazy = rows.find((r) => r.strategy === "lazy" && r.interval === 1000 && r.segmentSteps === 50)!;
  const out: Record<string, number | string> = {
    cheat_ev_worst_usdc_per_checkpoint: round(Math.max(worst.ev, worst.evOneColluding)),
    cheat_ev_worst_strategy: name(worst),
    cheat_ev_worst_three_honest_usdc_per_checkpoint: round(Math.max(...rows.map((r) => r.ev))),
    cheat_ev_worst_usdc_per_job: round(Math.max(worstJob.evJob, worstJob.evJobOneColluding)),
    cheat_ev_worst_job_strategy: name(worstJob),
    // The worst among strategies that are ever paid (the overall worst is one refused with certainty).
    cheat_ev_worst_ever_paid_usdc_per_checkpoint: round(
      Math.max(...rows.filter((r) => r.oneColluding.paid > 0).map((r) => Math.max(r.ev, r.evOneColluding))),
    ),
    cheat_ev_worst_ever_paid_strategy: name(
      rows
        .filter((r) => r.oneColluding.paid > 0)
        .reduce((a, r) => (Math.max(r.ev, r.evOneColluding) > Math.max(a.ev, a.evOneColluding) ? r : a)),
    ),
    cheat_strategies_tried: rows.length,
    cheat_trials_per_row: SIMULATED_TRIALS,
    lazy_caught_pct_interval_1000_simulated: pct(lazy.honest.slashed + lazy.honest.refused),
  };
  for (const n of [100, 500, 1000]) {
    const sim = (variant: (typeof COPY_STRATEGIES)[number]) =>
      [0.25, 0.5].map((share) => partialFabrication(n, share, SIMULATED_TRIALS, mulberry32(n), variant));
    const paid = (os: { honest: Outcomes; oneColluding: Outcomes }[]) =>
      Math.max(...os.flatMap((o) => [o.honest.paid, o.oneColluding.paid]));
    out[`partial_fabrication_paid_pct_interval_${n}_simulated`] = pct(paid(sim("prefix-copy")));
    out[`partial_fabrication_relabelled_paid_pct_interval_${n}_simulated`] = pct(paid(sim("relabelled")));
    out[`partial_fabrication_hidden_paid_pct_interval_${n}_simulated`] = pct(paid(sim("hidden")));
  }
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
    for (const n of [100, 500, 1000]) {
      let paid = 0;
      let slashed = 1;
      for (const share of [0.25, 0.5]) {
        const o = await copyOutcomes(trainer, store, n, share, "prefix-copy", REAL_TRIALS, mulberry32(n + share));
        out[`partial_fabrication_paid_pct_interval_${n}_fabricated_${100 * share}`] = pct(o.oneColluding.paid);
        paid = Math.max(paid, o.honest.paid, o.oneColluding.paid);
        slashed = Math.min(slashed, o.honest.slashed, o.oneColluding.slashed);
      }
      out[`partial_fabrication_paid_pct_interval_${n}`] = pct(paid);
      out[`partial_fabrication_slashed_pct_interval_${n}`] = pct(slashed);
    }
    out.partial_fabrication_trials_per_cell = REAL_TRIALS;
  } finally {
    await trainer.close();
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

const round = (x: number, digits = 6) => Math.round(x * 10 ** digits) / 10 ** digits;
