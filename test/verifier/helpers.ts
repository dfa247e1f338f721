/**
 * Shared helpers of the verifier tests (no tests here): a provider stand-in that trains segments and uploads them
 * to a checkpoint store exactly as the agent does (agent/train.ts, agent/segment.ts, agent/faults.ts), honest or
 * with one fault, and the three verifier keys (Hardhat accounts 3, 4, 5: the verifier Safe's owners).
 */
import { HDNodeWallet, Mnemonic } from "ethers";
import { behaviourOf, FAULT_KINDS, faultyUpload, type Fault, type FaultKind } from "../../agent/faults.ts";
import { honestUpload, type Segment, type SegmentStart, type Upload } from "../../agent/segment.ts";
import { trainSegment, isAbandoned } from "../../agent/train.ts";
import {
  blobHash,
  decodeCheckpoint,
  encodeCheckpoint,
  BlobStore,
  initialState,
  listTemplates,
  storedSteps,
  ZERO_HASH,
  type CheckpointStore,
  type Template,
  type Trainer,
  type TrainingState,
  workSeed,
} from "../../workloads/index.ts";
import { newVerifyCache, verifyCheckpoint, type JobFacts, type Report } from "../../verifier/checks.ts";
import { DEFAULT_CONFIG } from "../../verifier/verifier.ts";
import { localProfile } from "../../workloads/profile.ts";

export const MNEMONIC = "test test test test test test test test test test test junk";

/** Hardhat account i of the test mnemonic, with its private key (m/44'/60'/0'/0/i). */
export function hardhatWallet(i: number): HDNodeWallet {
  return HDNodeWallet.fromMnemonic(Mnemonic.fromPhrase(MNEMONIC), `m/44'/60'/0'/0/${i}`);
}

/** The three verifiers: Hardhat accounts 3, 4, 5. */
export const verifierWallets = () => [3, 4, 5].map(hardhatWallet);

/** A job seed (bytes32 hex) per test index. */
export const seedOf = (i: number) => blobHash(new TextEncoder().encode(`verifier-test-seed-${i}`));

/**
 * Cases a provider can produce for one segment. `honest` and the agent's fault kinds come from agent/faults.ts;
 * the rest are built here on the same Segment/Upload types:
 * - wrong-template / wrong-seed: honest training, the header names another template / the segment trains another seed;
 * - broken-chain: one intermediate state hash replaced by one with no stored blob;
 * - forked-start: trains from a state other than the accepted one (the job's initial state relabelled);
 * - not-a-checkpoint: random bytes uploaded;
 * - fabricated-step / wrong-data-step: ONE middle step perturbed / trained on other data, the rest honest from
 *   there (only sampling that very step, or an evaluation escalation, catches it).
 */
export const EXTRA_CASES = [
  "wrong-template",
  "wrong-seed",
  "broken-chain",
  "forked-start",
  "not-a-checkpoint",
  "fabricated-step",
  "wrong-data-step",
] as const;
export type AgentFaultCase = Exclude<FaultKind, "write-after-fence" | "die-at">;
export type Case = "honest" | AgentFaultCase | (typeof EXTRA_CASES)[number];
/** The agent's fault kinds that show in one segment's upload (not writing after the fence, nor dying). */
export const AGENT_FAULT_CASES = FAULT_KINDS.filter(
  (k): k is AgentFaultCase => k !== "write-after-fence" && k !== "die-at",
);

export type Produced = { report: Report; upload?: Upload; middleStep?: number };

/** The maker the test providers commit and report as: provider1 of the fixtures (Hardhat account 8), lower case. */
export const TEST_MAKER = "0x23618e81e3f5cdf7f54c3d65f7fbc0abf5b21e8f";
/** This machine's arithmetic profile: proven for every template (workloads/profile.ts), as a provider's would be. */
export const TEST_PROFILE = localProfile();

/**
 * One verifier's check of a report against `trainer`'s template and `store`, with a fresh cache: the salt is the
 * verifier's secret, the budget the deployed `--samples` unless given.
 */
export function checkerFor(trainer: Trainer, store: CheckpointStore, samples: number = DEFAULT_CONFIG.samples) {
  return (job: JobFacts, report: Report, sampleSalt: string) =>
    verifyCheckpoint({
      template: trainer.template,
      trainer,
      store,
      job,
      report,
      sampleSalt,
      samples,
      cache: newVerifyCache(),
    });
}

/** Trains and uploads segments for one template, into one store. */
export class Provider {
  trainer: Trainer;
  store: BlobStore;
  maker: string;
  profile: string;

  constructor(trainer: Trainer, store: BlobStore, maker = TEST_MAKER, profile = TEST_PROFILE) {
    this.trainer = trainer;
    this.store = store;
    this.maker = maker.toLowerCase();
    this.profile = profile;
  }

  get template(): Template {
    return this.trainer.template;
  }

  /** The segment start for a job at its accepted checkpoint. */
  async startOf(job: JobFacts): Promise<SegmentStart> {
    const start =
      job.acceptedStep === 0
        ? initialState(this.template, job.seed)
        : decodeCheckpoint(await this.store.get(job.acceptedHash)).state;
    return {
      templateId: this.template.templateId,
      seed: job.seed,
      prevCheckpointHash: job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash,
      start,
      maker: this.maker,
      profile: this.profile,
    };
  }

  async train(start: SegmentStart, toStep: number, fault?: Fault): Promise<Segment> {
    const seg = await trainSegment(this.trainer, start, toStep, behaviourOf(fault));
    if (isAbandoned(seg)) throw new Error("segment abandoned");
    return seg;
  }

  /** Uploads like agent/blobs.ts putUpload: state blobs first, the checkpoint last. */
  async put(upload: Upload): Promise<Report> {
    for (const blob of upload.stateBlobs) await this.store.put(blob);
    if (upload.placeUnderReportedHash) await this.placeUnder(upload.reportedHash, upload.checkpointBytes);
    else await this.store.put(upload.checkpointBytes);
    return { step: upload.step, hash: upload.reportedHash, provider: this.maker };
  }

  /** Like agent/blobs.ts placeUnder: never replaces a stored blob, so produce hash-mismatch on a fresh job. */
  private async placeUnder(hash: string, bytes: Uint8Array): Promise<void> {
    if (await this.store.has(hash))
      throw new Error(`test setup: ${hash} is already stored; use a fresh job for hash-mismatch`);
    await this.store.backend.write(hash.toLowerCase().slice(2), bytes);
  }

  /** A job whose first checkpoint (steps 1..firstStep) was produced honestly and accepted. */
  async acceptedJob(seed: string, firstStep: number): Promise<JobFacts> {
    const first = firstJob(this.template, seed);
    const { report } = await this.produce(first, firstStep, "honest");
    return afterAccept(first, report);
  }

  /** Produces one segment of `kind` from the job's accepted checkpoint to `toStep`, stored, and what to report. */
  async produce(job: JobFacts, toStep: number, kind: Case): Promise<Produced> {
    const start = await this.startOf(job);
    if (kind === "honest") return this.done(honestUpload(await this.train(start, toStep)));
    if ((AGENT_FAULT_CASES as string[]).includes(kind)) {
      const fault: Fault = { kind: kind as AgentFaultCase };
      const old =
        job.acceptedStep > 0 ? { hash: job.acceptedHash, bytes: await this.store.get(job.acceptedHash) } : undefined;
      return this.done(faultyUpload(await this.train(start, toStep, fault), fault, { old }));
    }
    return this.produceExtra(job, start, toStep, kind as (typeof EXTRA_CASES)[number]);
  }

  private async done(upload: Upload, middleStep?: number): Promise<Produced> {
    return { report: await this.put(upload), upload, middleStep };
  }

  private async produceExtra(
    job: JobFacts,
    start: SegmentStart,
    toStep: number,
    kind: (typeof EXTRA_CASES)[number],
  ): Promise<Produced> {
    const from = start.start.step;
    const middle = from + Math.max(1, Math.floor((toStep - from) / 2));
    switch (kind) {
      case "wrong-template": {
        const other = listTemplates().find((t) => t.templateId !== this.template.templateId)!;
        return this.done(honestUpload({ ...(await this.train(start, toStep)), templateId: other.templateId }));
      }
      case "wrong-seed":
        return this.done(honestUpload(await this.train({ ...start, seed: seedOf(9999) }, toStep)));
      case "broken-chain": {
        // A committed segment-boundary state that is not stored (its hash names no blob).
        const upload = honestUpload(await this.train(start, toStep));
        const stored = storedSteps(from, toStep, upload.checkpoint.segmentSteps);
        const gap = stored[Math.floor(stored.length / 2)];
        const i = gap - from - 1;
        const c = { ...upload.checkpoint, stepHashes: upload.checkpoint.stepHashes.slice() };
        c.stepHashes[i] = blobHash(new TextEncoder().encode(`missing state ${i}`));
        const bytes = encodeCheckpoint(c);
        const stateBlobs = upload.stateBlobs.filter((_, j) => stored[j] !== gap);
        return this.done({
          ...upload,
          checkpoint: c,
          checkpointBytes: bytes,
          reportedHash: blobHash(bytes),
          stateBlobs,
        });
      }
      case "forked-start": {
        const fork: TrainingState = { ...initialState(this.template, seedOf(4242)), step: from };
        return this.done(honestUpload(await this.train({ ...start, start: fork }, toStep)));
      }
      case "not-a-checkpoint": {
        // Smaller than any checkpoint of the template (a larger body is refused unread, as blob-unreadable).
        const bytes = new Uint8Array(1024).map((_, i) => (i * 2654435761) >>> 24);
        return { report: { step: toStep, hash: await this.store.put(bytes), provider: this.maker } };
      }
      case "fabricated-step":
      case "wrong-data-step":
        return this.done(await this.oneBadStep(start, toStep, middle, kind), middle);
    }
  }

  /** Honest training except step `bad`, which is perturbed or trained on other data; later steps honest from it. */
  private async oneBadStep(
    start: SegmentStart,
    toStep: number,
    bad: number,
    kind: "fabricated-step" | "wrong-data-step",
  ): Promise<Upload> {
    const states: TrainingState[] = [];
    let s = start.start;
    for (let step = s.step + 1; step <= toStep; step++) {
      const opts = kind === "wrong-data-step" && step === bad ? { dataSeedOverride: seedOf(777) } : {};
      s = (await this.trainer.trainStep(s, workSeed(start.seed, start.maker), step, opts)).state;
      if (kind === "fabricated-step" && step === bad) {
        s = { ...s, weights: s.weights.map((w) => ({ ...w, data: w.data.map((v, i) => v + ((i % 7) - 3) * 1e-3) })) };
      }
      states.push(s);
    }
    return honestUpload({ ...start, states, trainedSteps: states.length, loss: 0 });
  }
}

/** The job's facts after `report` was accepted. */
export const afterAccept = (job: JobFacts, report: Report): JobFacts => ({
  ...job,
  acceptedStep: report.step,
  acceptedHash: report.hash,
});

export const firstJob = (template: Template, seed: string): JobFacts => ({
  seed,
  templateId: template.templateId,
  acceptedStep: 0,
  acceptedHash: ZERO_HASH,
});
