/**
 * The detection matrix engine, shared by test/verifier/detectionMatrix.ts (which asserts) and bench/verifier.ts
 * (which reports): every case × several job seeds, each checkpoint checked by three verifiers that sample
 * independently (their salts come from their own keys, as in production), decided by a 2-of-3 quorum under the
 * fault-claim rule (docs/ARCHITECTURE.md, "Fault claims"): a verifier whose replay finds a step that does not
 * reproduce claims it (storing the committed input state), every other verifier re-checks the claim with one real
 * step's replay, and a reproduced claim is signed by all of them — a refusal that slashes. Without a claim, two
 * independent refusals are needed (and nothing is slashed). No tests here.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createTrainer,
  defaultSegmentSteps,
  FsCheckpointStore,
  getState,
  loadTemplate,
  putState,
  replayStep,
  spanDetectionProbability,
  stateHash,
  type BlobStore,
  type Trainer,
  workSeedOf,
} from "../../workloads/index.ts";
import {
  loadReported,
  newVerifyCache,
  verifyCheckpoint,
  type CheckpointVerdict,
  type ReplayFault,
  type VerifyCache,
} from "../../verifier/checks.ts";
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
  /** Checks (accepted or not) whose evaluation escalated to a full replay. */
  escalations: number;
  /** Trials refused by the quorum under the fault-claim rule (a reproduced claim, or 2 independent refusals). */
  quorumRefusals: number;
  /** Trials at least 2 of 3 verifiers refused on their own (the rule before fault claims). */
  independentQuorumRefusals: number;
  /** Trials at least one verifier refused (the any-of-three rate the claim rule must reach). */
  anyRefusals: number;
  /** Trials refused through a reproduced fault claim: each slashes the provider's stake. */
  slashes: number;
  /** Re-checks of another verifier's claim that did not reproduce it (for honest verifiers: always 0). */
  unreproducedClaims: number;
  /**
   * For sampling cases: P(one verifier replays the bad step's segment), P(at least 2 of 3 do) and
   * P(at least one of 3 does) = 1 − (1 − p)³, the quorum rate with fault claims.
   */
  expectedVerifierRate?: number;
  expectedQuorumRate?: number;
  expectedAnyRate?: number;
  /** Every reason code seen, with counts. */
  codes: Record<string, number>;
  verifierCpuMs: number;
};

const ESCROW = hardhatWallet(20).address;
const CHAIN_ID = 31337n;

/** P(at least 2 of 3 independent verifiers catch), each with probability p. */
export const quorumProbability = (p: number) => 3 * p * p * (1 - p) + p * p * p;
/** P(at least 1 of 3 independent verifiers catches), each with probability p. */
export const anyOfThreeProbability = (p: number) => 1 - (1 - p) ** 3;

/** The finder publishes its claim's evidence: the committed input state, under its state hash. */
async function publishEvidence(store: BlobStore, fault: ReplayFault): Promise<void> {
  if (fault.input) await putState(store, fault.input);
}

/**
 * Another verifier's one-step re-check of a claim (the rule verifier/claims.ts applies): the checkpoint commits
 * the claim's input and output hashes at the fault step, and the stored input state, its hash checked, replays
 * that step to the claim's hash and not to the committed one. A real replay.
 */
async function reproduces(trainer: Trainer, store: BlobStore, hash: string, f: ReplayFault): Promise<boolean> {
  const c = await loadReported(store, hash);
  const i = f.step - c.startStep - 1;
  const committedInput = i === 0 ? c.startStateHash : c.stepHashes[i - 1];
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (
    i < 0 ||
    i >= c.stepHashes.length ||
    !same(committedInput, f.inputHash) ||
    !same(c.stepHashes[i], f.committedHash)
  )
    return false;
  const input = await getState(store, f.inputHash);
  if (!same(stateHash(input), f.inputHash)) return false;
  const replayed = stateHash(await replayStep(trainer, input, workSeedOf(c), f.step));
  return !same(replayed, f.committedHash) && same(replayed, f.replayedHash);
}

type QuorumOutcome = { refused: boolean; slashed: boolean; unreproduced: number };

/**
 * The 2-of-3 decision with fault claims: the first verifier whose verdict carries a fault claims it, the others
 * re-check it; a claim reproduced by the finder and at least one other is a slashing refusal. Otherwise a plain
 * refusal needs two refusing verifiers.
 */
async function quorumOf(
  trainer: Trainer,
  store: BlobStore,
  hash: string,
  verdicts: CheckpointVerdict[],
): Promise<QuorumOutcome> {
  let unreproduced = 0;
  const finder = verdicts.findIndex((v) => v.fault !== undefined);
  if (finder >= 0) {
    const fault = verdicts[finder].fault!;
    await publishEvidence(store, fault);
    let signers = 1;
    for (const i of verdicts.keys()) {
      if (i === finder) continue;
      if (await reproduces(trainer, store, hash, fault)) signers++;
      else unreproduced++;
    }
    if (signers >= 2) return { refused: true, slashed: true, unreproduced };
  }
  return { refused: verdicts.filter((v) => !v.accept).length >= 2, slashed: false, unreproduced };
}

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
        escalations: 0,
        quorumRefusals: 0,
        independentQuorumRefusals: 0,
        anyRefusals: 0,
        slashes: 0,
        unreproducedClaims: 0,
        codes: {},
        verifierCpuMs: 0,
      };
      if (SAMPLING_CASES.includes(kind)) {
        // The bad step is the segment's middle one (helpers.ts produceExtra); verifiers replay whole segments.
        const bad = o.interval + Math.max(1, Math.floor(o.interval / 2));
        const m = defaultSegmentSteps(o.interval);
        row.expectedVerifierRate = spanDetectionProbability(o.interval, 2 * o.interval, m, o.samples, bad);
        row.expectedQuorumRate = quorumProbability(row.expectedVerifierRate);
        row.expectedAnyRate = anyOfThreeProbability(row.expectedVerifierRate);
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
          provider: provider.maker,
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
        row.escalations += verdicts.filter((v) => v.metrics.fullReplay).length;
        if (refused.length >= 2) row.independentQuorumRefusals++;
        if (refused.length >= 1) row.anyRefusals++;
        const q = await quorumOf(tr, provider.store, report.hash, verdicts);
        if (q.refused) row.quorumRefusals++;
        if (q.slashed) row.slashes++;
        row.unreproducedClaims += q.unreproduced;
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
        : `  expected verifier ${pct(r.expectedVerifierRate)} any-of-3 ${pct(r.expectedAnyRate!)}` +
          ` (2-of-3 without claims ${pct(r.expectedQuorumRate!)})`;
    return (
      `${r.template.padEnd(11)} ${r.kind.padEnd(17)} quorum refused ${r.quorumRefusals}/${r.trials} (${pct(r.quorumRefusals / r.trials)})` +
      `  slashed ${r.slashes}  2-of-3 alone ${r.independentQuorumRefusals}` +
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
