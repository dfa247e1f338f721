/**
 * The detection matrix engine, shared by test/verifier/detectionMatrix.ts (which asserts) and bench/verifier.ts
 * (which reports): every case × several job seeds, each checkpoint checked by three verifiers that sample
 * independently (their salts come from their own keys, as in production), decided by a 2-of-3 quorum.
 * No tests here.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createTrainer,
  defaultSegmentSteps,
  FsCheckpointStore,
  loadTemplate,
  spanDetectionProbability,
  type Trainer,
} from "../../workloads/index.ts";
import { newVerifyCache, verifyCheckpoint, type CheckpointVerdict, type VerifyCache } from "../../verifier/checks.ts";
import { sampleSalt, type CheckpointItem } from "../../verifier/work.ts";
import {
  AGENT_FAULT_CASES,
  EXTRA_CASES,
  hardhatWallet,
  Provider,
  seedOf,
  verifierWallets,
  type Case,
} from "./helpers.ts";

/** Cases with ONE bad step in the middle of the segment: caught when a verifier samples that step. */
export const SAMPLING_CASES: Case[] = ["fabricated-step", "wrong-data-step"];
/** Cases every verifier refuses whatever it samples (integrity, chain, or the always-replayed last step). */
export const CERTAIN_CASES: Case[] = [...AGENT_FAULT_CASES, ...EXTRA_CASES.filter((c) => !SAMPLING_CASES.includes(c))];

export type MatrixOptions = {
  template: string;
  cases: Case[];
  trials: number;
  /** Steps per checkpoint (the first, accepted one and the checked one). */
  interval: number;
  samples: number;
  /** Seeds are seedOf(seedBase + case index × 1000 + trial): every trial is its own job. */
  seedBase: number;
};

export type MatrixRow = {
  template: string;
  kind: Case;
  trials: number;
  /** Individual verifier checks (trials × 3) and how many refused. */
  checks: number;
  verifierRefusals: number;
  /** Refusals that came from the evaluation rule's escalation to a full replay (not from sampling). */
  escalatedRefusals: number;
  quorumRefusals: number;
  /** For sampling cases: P(one verifier replays the bad step's segment) and P(at least 2 of 3 do). */
  expectedVerifierRate?: number;
  expectedQuorumRate?: number;
  /** Every reason code seen, with counts. */
  codes: Record<string, number>;
  verifierCpuMs: number;
};

const ESCROW = hardhatWallet(20).address;
const CHAIN_ID = 31337n;

/** P(at least 2 of 3 independent verifiers catch), each with probability p. */
export const quorumProbability = (p: number) => 3 * p * p * (1 - p) + p * p * p;

export async function runMatrix(o: MatrixOptions, trainer?: Trainer): Promise<MatrixRow[]> {
  const template = loadTemplate(o.template);
  const own = !trainer;
  const tr = trainer ?? (await createTrainer(template));
  const dir = await mkdtemp(join(tmpdir(), "gpuchain-verifier-matrix-"));
  const provider = new Provider(tr, new FsCheckpointStore(dir));
  const wallets = verifierWallets();
  const caches: VerifyCache[] = wallets.map(() => newVerifyCache());
  const rows: MatrixRow[] = [];
  try {
    for (const [ci, kind] of o.cases.entries()) {
      const row: MatrixRow = {
        template: o.template,
        kind,
        trials: o.trials,
        checks: 0,
        verifierRefusals: 0,
        escalatedRefusals: 0,
        quorumRefusals: 0,
        codes: {},
        verifierCpuMs: 0,
      };
      if (SAMPLING_CASES.includes(kind)) {
        // The bad step is the segment's middle one (helpers.ts produceExtra); verifiers replay whole segments.
        const bad = o.interval + Math.max(1, Math.floor(o.interval / 2));
        const m = defaultSegmentSteps(o.interval);
        row.expectedVerifierRate = spanDetectionProbability(o.interval, 2 * o.interval, m, o.samples, bad);
        row.expectedQuorumRate = quorumProbability(row.expectedVerifierRate);
      }
      for (let t = 0; t < o.trials; t++) {
        const job = await provider.acceptedJob(seedOf(o.seedBase + ci * 1000 + t), o.interval);
        const { report } = await provider.produce(job, 2 * o.interval, kind);
        const item: CheckpointItem = {
          kind: "checkpoint",
          key: "",
          jobId: BigInt(ci * 1000 + t + 1),
          epoch: 1n,
          step: report.step,
          hash: report.hash,
          templateId: job.templateId,
          seed: job.seed,
          acceptedStep: job.acceptedStep,
          acceptedHash: job.acceptedHash,
        };
        const verdicts: CheckpointVerdict[] = [];
        for (const [i, w] of wallets.entries()) {
          verdicts.push(
            await verifyCheckpoint({
              template,
              trainer: tr,
              store: provider.store,
              job,
              report,
              samples: o.samples,
              cache: caches[i],
              sampleSalt: sampleSalt(w.privateKey, CHAIN_ID, ESCROW, item),
            }),
          );
        }
        const refused = verdicts.filter((v) => !v.accept);
        row.checks += verdicts.length;
        row.verifierRefusals += refused.length;
        row.escalatedRefusals += refused.filter((v) => v.metrics.fullReplay).length;
        if (refused.length >= 2) row.quorumRefusals++;
        for (const v of verdicts) {
          row.verifierCpuMs += v.metrics.cpuMs;
          for (const c of v.codes) row.codes[c] = (row.codes[c] ?? 0) + 1;
        }
      }
      rows.push(row);
    }
  } finally {
    if (own) await tr.close();
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

export function formatRows(rows: MatrixRow[]): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const lines = rows.map((r) => {
    const expected =
      r.expectedVerifierRate === undefined
        ? ""
        : `  expected verifier ${pct(r.expectedVerifierRate)} quorum ${pct(r.expectedQuorumRate!)}`;
    return (
      `${r.template.padEnd(11)} ${r.kind.padEnd(17)} quorum refused ${r.quorumRefusals}/${r.trials} (${pct(r.quorumRefusals / r.trials)})` +
      `  verifiers ${r.verifierRefusals}/${r.checks} (${pct(r.verifierRefusals / r.checks)}, escalated ${r.escalatedRefusals})${expected}` +
      `  codes ${
        Object.entries(r.codes)
          .map(([c, n]) => `${c}×${n}`)
          .join(",") || "-"
      }`
    );
  });
  return lines.join("\n");
}
