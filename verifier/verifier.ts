/**
 * One Quality Guard verifier in the shape of every long-running part: a config built and validated once, a tick
 * that rebuilds pending work from chain state (`jobCount`, `jobOf`, `statusOf`), decides each item with
 * checks.ts (or its injected behaviour, behaviour.ts), signs the escrow digest as a Safe owner and posts the
 * signature to the collector, and the shared runner (sdk/run/runner.ts). All I/O (chain, store, collector, clock,
 * logger) is injected.
 *
 * Every tick re-posts the signature of every decision the chain still waits for, so the collector may restart at
 * any time. A report is decided once: the decision is cached by (job, epoch, step, hash) and never replaced by
 * another (DecisionStore). Reports from fenced workers never reach the verifier: the chain keeps only the pending
 * checkpoint of the current epoch.
 */
import type { Signer, TypedDataDomain } from "ethers";
import { escrowDomain, signAsSafeOwner } from "../sdk/rules/verifierSignatures.ts";
import { isTrainingOver, jobIds, type JobView } from "../sdk/rules/job.ts";
import { readJob, type JobReader } from "../sdk/node/jobReads.ts";
import type { Logger } from "../sdk/run/log.ts";
import type { LogCursor } from "../sdk/node/logRange.ts";
import { runLoop } from "../sdk/run/runner.ts";
import {
  createSampler,
  createTrainer,
  loadTemplate,
  localProfile,
  replayUnprovenReason,
  UnknownTemplateError,
  type CheckpointStore,
  type Template,
  type Trainer,
  type Sampler,
} from "../workloads/index.ts";
import { DEFAULT_ABSTAIN_AFTER_MS, OutageTracker } from "./outage.ts";
import { BEHAVIOURS, verifierBehaviour, type BehaviourName, type VerifierBehaviour } from "./behaviour.ts";
import {
  CannotVerifyError,
  StoreOutageError,
  loadReported,
  newVerifyCache,
  verifyCheckpoint,
  verifyFinal,
  type CheckpointVerdict,
  type JobFacts,
  type ReasonCode,
  type ReplayFault,
  type VerifyCache,
} from "./checks.ts";
import type { SignaturePoster } from "./collector.ts";
import type { DecisionStore } from "./decisions.ts";
import { claimIsFor, claimUnprovenReason, publishEvidence, recheckClaim, type RecheckResult } from "./claims.ts";
import {
  checkMessage,
  checkpointMessage,
  claimMessage,
  digestOf,
  faultMessage,
  planWork,
  sampleSalt,
  verdictMessage,
  type CheckpointItem,
  type FaultBody,
  type SignatureBody,
  type SignedDecision,
  type VerdictItem,
  type WorkItem,
} from "./work.ts";

export { BEHAVIOURS, type BehaviourName };

export type VerifierConfig = {
  chainId: bigint;
  escrow: string;
  safe: string;
  /** Sampled steps replayed per checkpoint, besides the last step. */
  samples: number;
  /** `honest` verifies; the other two are malicious verifiers for tests and demos, logged loudly. */
  behaviour: BehaviourName;
  /** Decide and log, but post nothing. */
  dryRun: boolean;
  pollMs: number;
  /** How long a reported blob may be missing from the store before the report is refused. */
  missingBlobGraceMs: number;
  /** How long the store may fail to answer for an item before the verifier says it abstains (it never refuses). */
  abstainAfterMs?: number;
};

export const DEFAULT_CONFIG = {
  samples: 4,
  behaviour: "honest",
  dryRun: false,
  pollMs: 2_000,
  missingBlobGraceMs: 30_000,
} as const;

/**
 * Refusals that may be someone else's doing rather than the reporter's, so they are waited out for
 * missingBlobGraceMs first: a blob not there yet, no plain blob under its name, or other bytes under it — anyone who
 * may write the store could have overwritten or removed a put, and the reporter's agent puts its blobs
 * again while its report is undecided (agent/blobs.ts guardBlobs). Still so after the grace: the reporter's problem.
 */
export const GRACE_CODES: ReadonlySet<ReasonCode> = new Set<ReasonCode>([
  "blob-missing",
  "blob-unreadable",
  "hash-mismatch",
  "chain-gap",
]);

export function validateConfig(c: VerifierConfig): VerifierConfig {
  if (!Number.isSafeInteger(c.samples) || c.samples < 0)
    throw new RangeError(`samples must be a non-negative integer, got ${c.samples}`);
  verifierBehaviour(c.behaviour); // throws on an unknown name
  if (!(c.pollMs > 0)) throw new RangeError("pollMs must be positive");
  return Object.freeze({ ...c });
}

/** The escrow views the verifier reads (a connected JobEscrow contract satisfies it). */
export interface EscrowReader extends JobReader {
  jobCount(): Promise<bigint>;
}

/** The escrow events after which a job is past training (the verifier then stops reading it). */
export const TRAINING_ENDS = ["VerdictSubmitted", "JobCancelled", "JobExpired"];

export type VerifierDeps = {
  chain: EscrowReader;
  /** The verifier's key: signs as a Safe owner; its private key also keys the sampling salt. */
  signer: Signer & { privateKey: string; address: string };
  store: CheckpointStore;
  collector: SignaturePoster;
  decisions: DecisionStore;
  log: Logger;
  now?: () => number;
  /**
   * Follows the chain's blocks (sdk/node/logRange.ts LogCursor, e.g. over the events that end training): when it reports a
   * reorganisation, the jobs remembered as past training are read again, since the block that ended one may be gone.
   */
  reorgs?: Pick<LogCursor, "poll">;
};

/** `abstaining`: items whose store reads have failed past the bound (logged; nothing is signed for them). */
export type TickSummary = {
  items: number;
  decided: number;
  posted: number;
  waiting: number;
  errors: number;
  abstaining: number;
};

/** State one verifier keeps between ticks (all of it rebuildable: losing it only costs re-verification). */
export class Verifier {
  readonly config: VerifierConfig;
  readonly behaviour: VerifierBehaviour;
  private deps: VerifierDeps;
  private domain: TypedDataDomain;
  private trainers = new Map<string, Promise<{ template: Template; trainer: Trainer }>>();
  private cache: VerifyCache = newVerifyCache();
  private readonly samplers = new Map<string, Promise<Sampler | undefined>>();
  private finished = new Set<bigint>();
  private firstMissing = new Map<string, number>();
  private outages: OutageTracker;
  private now: () => number;
  /** This verifier's answers to other verifiers' claims, by claim digest (rebuilt by re-checking after a restart). */
  private answers = new Map<string, { itemKey: string; body: SignatureBody; reproduced: boolean }>();

  constructor(config: VerifierConfig, deps: VerifierDeps) {
    this.config = validateConfig(config);
    this.behaviour = verifierBehaviour(this.config.behaviour);
    this.deps = deps;
    this.domain = escrowDomain(config.chainId, config.escrow);
    this.now = deps.now ?? Date.now;
    this.outages = new OutageTracker(config.abstainAfterMs ?? DEFAULT_ABSTAIN_AFTER_MS);
  }

  get address(): string {
    return this.deps.signer.address;
  }

  /** Reads every job still in training. Throws when the chain cannot be read (the runner retries next tick). */
  async readJobs(): Promise<JobView[]> {
    const { chain, reorgs } = this.deps;
    const r = await reorgs?.poll();
    if (r?.reorged && this.finished.size > 0) {
      // A verdict, a cancel or an expiry may have been in the replaced blocks: what ended is read again.
      this.deps.log.warn("chain reorganisation: reading again the jobs that had left training", {
        ...r.reorged,
        jobs: this.finished.size,
      });
      this.finished.clear();
    }
    const views: JobView[] = [];
    for (const jobId of jobIds(await chain.jobCount(), (id) => this.finished.has(id))) {
      const job = await readJob(chain, jobId);
      if (isTrainingOver(job.status)) this.finished.add(jobId);
      else views.push(job);
    }
    return views;
  }

  /** One pass: plan from chain state, decide what is new, (re-)post every live decision. */
  async tick(): Promise<TickSummary> {
    const summary: TickSummary = { items: 0, decided: 0, posted: 0, waiting: 0, errors: 0, abstaining: 0 };
    const items = planWork(await this.readJobs());
    summary.items = items.length;
    const live = new Set(items.map((i) => i.key));
    this.deps.decisions.retain(live);
    for (const key of this.firstMissing.keys()) if (!live.has(key)) this.firstMissing.delete(key);
    this.outages.retain(live);
    for (const [digest, a] of this.answers) if (!live.has(a.itemKey)) this.answers.delete(digest);
    const claims = await this.pendingClaims(items);
    for (const item of items) {
      try {
        let decision = this.deps.decisions.get(item.key);
        // Before signing anything for a checkpoint, answer the other verifiers' claims on it.
        if (item.kind === "checkpoint" && claims === undefined && !decision) {
          summary.waiting++;
          continue;
        }
        const reproduced = item.kind === "checkpoint" && (await this.answerClaims(item, claims ?? [], summary));
        if (!decision && reproduced) continue; // it signed the fault refusal: that is its decision
        if (!decision) {
          decision = await this.decide(item);
          if (this.outages.recovered(item.key))
            this.deps.log.info("store readable again", { job: item.jobId, key: item.key });
          if (!decision) {
            summary.waiting++;
            continue;
          }
          this.deps.decisions.put(decision);
          summary.decided++;
        }
        if (this.config.dryRun) continue;
        await this.deps.collector.post(decision.body);
        summary.posted++;
      } catch (err) {
        summary.errors++;
        this.itemError(item, err);
      }
    }
    summary.abstaining = this.outages.abstaining(this.now());
    return summary;
  }

  private itemError(item: WorkItem, err: unknown): void {
    const fields = { job: item.jobId, kind: item.kind, key: item.key, error: (err as Error)?.message ?? String(err) };
    if (err instanceof StoreOutageError) {
      const o = this.outages.failed(item.key, this.now());
      const msg = o.abstaining
        ? "abstaining: store unreachable (not a refusal; still retrying)"
        : "store unreachable; retrying";
      const level = o.firstAbstain ? "error" : "warn";
      this.deps.log[level](msg, { ...fields, outageMs: o.sinceMs });
    } else if (err instanceof CannotVerifyError) this.deps.log.warn("cannot verify yet", fields);
    else this.deps.log.error("item failed", fields);
  }

  private async decide(item: WorkItem): Promise<SignedDecision | undefined> {
    return item.kind === "checkpoint" ? this.decideCheckpoint(item) : this.decideVerdict(item);
  }

  private async trainerFor(templateId: string): Promise<{ template: Template; trainer: Trainer }> {
    let entry = this.trainers.get(templateId);
    if (!entry) {
      entry = (async () => {
        const template = loadTemplate(templateId);
        // The proven-profile safety net: on a profile not proven for the template a mismatch would not be evidence
        // against the provider, so this verifier abstains.
        const unproven = replayUnprovenReason(template, localProfile());
        if (unproven) throw new CannotVerifyError(unproven);
        return { template, trainer: await createTrainer(template) };
      })();
      this.trainers.set(templateId, entry);
      entry.catch(() => this.trainers.delete(templateId));
    }
    try {
      return await entry;
    } catch (err) {
      if (err instanceof UnknownTemplateError) throw new CannotVerifyError(`unknown template ${templateId}`);
      throw err;
    }
  }

  /** The on-chain facts both checks start from (a verdict's "accepted" checkpoint is the final one). */
  private static facts(item: WorkItem): JobFacts {
    const accepted =
      item.kind === "checkpoint"
        ? { acceptedStep: item.acceptedStep, acceptedHash: item.acceptedHash }
        : { acceptedStep: item.totalSteps, acceptedHash: item.modelHash };
    return { seed: item.seed, templateId: item.templateId, ...accepted };
  }

  private async checkInputs(item: WorkItem) {
    const { template, trainer } = await this.trainerFor(item.templateId);
    return { template, trainer, store: this.deps.store, cache: this.cache, job: Verifier.facts(item) };
  }

  private checkpointVerdict(item: CheckpointItem): Promise<CheckpointVerdict> {
    return this.behaviour.checkpoint(async () => {
      return verifyCheckpoint({
        ...(await this.checkInputs(item)),
        report: { step: item.step, hash: item.hash, provider: item.provider },
        sampleSalt: sampleSalt(this.deps.signer.privateKey, this.config.chainId, this.config.escrow, item),
        samples: this.config.samples,
      });
    }, item.step - item.acceptedStep);
  }

  /** Signs `typed` (the escrow's or the collector's digest of it) as a Safe owner: the body to post. */
  private async sign<B extends SignatureBody>(
    kind: B["kind"],
    message: B["message"],
    typed: Parameters<typeof digestOf>[1]["typed"],
  ): Promise<B> {
    const digest = digestOf(this.domain, { kind, typed } as Parameters<typeof digestOf>[1]);
    const signature = await signAsSafeOwner(this.deps.signer, this.config.chainId, this.config.safe, digest);
    return { kind, message, digest, signer: this.address, signature } as B;
  }

  private decided(item: WorkItem, body: SignatureBody): SignedDecision {
    return { key: item.key, decidedAt: this.now(), body };
  }

  private async decideCheckpoint(item: CheckpointItem): Promise<SignedDecision | undefined> {
    if (this.behaviour.forgeFault) return this.forgedClaim(item);
    const v = await this.checkpointVerdict(item);
    if (!v.accept && v.codes.every((c) => GRACE_CODES.has(c))) {
      const first = this.firstMissing.get(item.key) ?? this.now();
      this.firstMissing.set(item.key, first);
      if (this.now() - first < this.config.missingBlobGraceMs) {
        this.deps.log.warn(
          "checkpoint blobs not readable in the store yet (missing, no plain blob, or other bytes); waiting",
          {
            job: item.jobId,
            epoch: item.epoch,
            step: item.step,
            hash: item.hash,
          },
        );
        return undefined;
      }
    }
    this.logCheckpoint(item, v, v.accept ? await this.sampleOf(item) : undefined);
    if (!v.accept && v.fault && this.behaviour.honest) {
      const unproven = await this.claimUnproven(item, v.profile);
      if (!unproven) return this.claim(item, v.fault);
      this.deps.log.warn("replay mismatch is no evidence here: refusing without a fault claim", {
        job: item.jobId,
        step: item.step,
        faultStep: v.fault.step,
        why: unproven,
      });
    }
    const { message, typed } = checkpointMessage(item, v.accept);
    return this.decided(item, await this.sign("checkpoint", message, typed));
  }

  /**
   * A language template's greedy sample from the accepted state (workloads/sample.ts), for people watching the
   * log and the dashboard; undefined for classifiers. Presentation only: a failure here never changes a decision.
   */
  private async sampleOf(item: CheckpointItem): Promise<string | undefined> {
    const state = this.cache.states.get(item.hash.toLowerCase())?.state;
    if (!state) return undefined;
    try {
      let sampler = this.samplers.get(item.templateId);
      if (!sampler) {
        sampler = this.trainerFor(item.templateId).then(({ template }) => createSampler(template));
        this.samplers.set(item.templateId, sampler);
      }
      return await (await sampler)?.sample(state);
    } catch (err) {
      this.deps.log.warn("could not sample text from the accepted state", { job: item.jobId, error: String(err) });
      return undefined;
    }
  }

  private logCheckpoint(item: CheckpointItem, v: CheckpointVerdict, sample?: string): void {
    const m = v.metrics;
    this.deps.log.info("checkpoint decided", {
      job: item.jobId,
      epoch: item.epoch,
      step: item.step,
      hash: item.hash,
      action: v.accept ? "accept" : "refuse",
      reasons: v.reasons,
      notes: m.notes,
      accuracy: m.accuracy,
      loss: m.loss,
      baselineAccuracy: m.baselineAccuracy,
      ...(sample === undefined ? {} : { sample }),
      replayedSteps: m.replayedSteps,
      intervalSteps: m.intervalSteps,
      fullReplay: m.fullReplay,
      cpuMs: round(m.cpuMs),
      trainingCpuMs: m.trainingCpuMsEstimate === null ? null : round(m.trainingCpuMsEstimate),
      computeRatio: m.trainingCpuMsEstimate ? round(m.cpuMs / m.trainingCpuMsEstimate) : null,
      behaviour: this.config.behaviour,
      dryRun: this.config.dryRun,
    });
  }

  /**
   * Why a replay mismatch on this report would not be evidence, or undefined: judged against the profile the
   * checkpoint itself commits (inside the reported hash), never against what the provider or the coordinator
   * says afterwards (a later heartbeat with an unproven profile used to dodge the slash).
   */
  private async claimUnproven(item: CheckpointItem, committedProfile: string | undefined): Promise<string | undefined> {
    const { template } = await this.trainerFor(item.templateId);
    return claimUnprovenReason(template, committedProfile, localProfile());
  }

  /** Publishes a fault claim: the evidence states into the store, then the signed FaultRefusal. */
  private async claim(item: CheckpointItem, fault: ReplayFault): Promise<SignedDecision> {
    await publishEvidence(this.deps.store, fault);
    const message = claimMessage(item, fault, this.address);
    const body = await this.sign<FaultBody>("fault", message, faultMessage(message));
    this.deps.log.warn("fault claim: replay mismatch on a proven profile", {
      job: item.jobId,
      epoch: item.epoch,
      step: item.step,
      faultStep: fault.step,
      inputHash: fault.inputHash,
      committedHash: fault.committedHash,
      replayedHash: fault.replayedHash,
      digest: body.digest,
    });
    return this.decided(item, body);
  }

  /** `false-claim`: a claim on the checkpoint's last step whatever the replay gives (its other checks skipped). */
  private async forgedClaim(item: CheckpointItem): Promise<SignedDecision> {
    const c = await loadReported(this.deps.store, item.hash).catch((err) => {
      throw err instanceof StoreOutageError ? err : new CannotVerifyError(`forging a claim: ${err.message}`);
    });
    return this.claim(item, this.behaviour.forgeFault!(c));
  }

  /** Every pending claim from the collector, or undefined (logged) when it cannot be read now. */
  private async pendingClaims(items: WorkItem[]): Promise<FaultBody[] | undefined> {
    const { collector } = this.deps;
    if (!collector.claims || !items.some((i) => i.kind === "checkpoint")) return [];
    try {
      return await collector.claims();
    } catch (err) {
      this.deps.log.warn("cannot read fault claims; deciding no checkpoint this tick", {
        error: (err as Error)?.message ?? String(err),
      });
      return undefined;
    }
  }

  /**
   * Answers (once, then re-posts every tick) each claim another verifier made on `item`: the same FaultRefusal
   * when one step's replay reproduces it, a signed "not reproduced" check otherwise. True if any reproduced.
   */
  private async answerClaims(item: CheckpointItem, claims: FaultBody[], summary: TickSummary): Promise<boolean> {
    let reproduced = false;
    for (const claim of claims) {
      const m = claim.message;
      if (!claimIsFor(m, item) || m.fault.finder.toLowerCase() === this.address.toLowerCase()) continue;
      if (!this.behaviour.honest) continue; // the malicious modes answer no one
      let answer = this.answers.get(claim.digest);
      if (!answer) {
        answer = await this.answerClaim(item, claim);
        this.answers.set(claim.digest, answer);
      }
      reproduced ||= answer.reproduced;
      if (this.config.dryRun) continue;
      await this.deps.collector.post(answer.body);
      summary.posted++;
    }
    return reproduced;
  }

  private async answerClaim(item: CheckpointItem, claim: FaultBody) {
    const m = claim.message;
    const r: RecheckResult = await recheckClaim({
      ...(await this.checkInputs(item)),
      item,
      claim: m,
      verifierProfile: localProfile(),
    });
    const fields = { job: item.jobId, step: item.step, faultStep: m.fault.step, finder: m.fault.finder, why: r.why };
    if (r.reproduced) {
      this.deps.log.warn("fault claim reproduced: signing its fault refusal", fields);
      const body = await this.sign<FaultBody>("fault", m, faultMessage(m));
      return { itemKey: item.key, body, reproduced: true };
    }
    this.deps.log.warn("fault claim not reproduced; ignored", fields);
    const { message, typed } = checkMessage(item, digestOf(this.domain, { kind: "fault", typed: faultMessage(m) }));
    return { itemKey: item.key, body: await this.sign("check", message, typed), reproduced: false };
  }

  private async decideVerdict(item: VerdictItem): Promise<SignedDecision | undefined> {
    const v = await verifyFinal({
      ...(await this.checkInputs(item)),
      job: { ...Verifier.facts(item), totalSteps: item.totalSteps },
    });
    const passed = this.behaviour.passed(v.passed);
    const { message, typed } = verdictMessage(item, v.metric, passed);
    this.deps.log.info("verdict decided", {
      job: item.jobId,
      modelHash: item.modelHash,
      action: "verdict",
      passed,
      metric: v.metric,
      accuracy: v.accuracy,
      reasons: v.reasons,
      cpuMs: round(v.cpuMs),
      behaviour: this.config.behaviour,
      dryRun: this.config.dryRun,
    });
    return this.decided(item, await this.sign("verdict", message, typed));
  }

  async close(): Promise<void> {
    const entries = [...this.trainers.values()];
    this.trainers.clear();
    for (const e of entries) {
      try {
        await (await e).trainer.close();
      } catch {
        // a trainer that never started has nothing to release
      }
    }
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

/**
 * Runs ticks until `signal` aborts (or once), on the shared runner: ticks never overlap; the next one starts
 * `pollMs` after the previous one ended. A tick that fails as a whole (chain unreachable) is logged and retried.
 */
export async function runVerifier(
  v: Verifier,
  log: Logger,
  opts: { signal?: AbortSignal; once?: boolean; wait?: (ms: number, signal: AbortSignal) => Promise<void> } = {},
): Promise<void> {
  if (!v.behaviour.honest) {
    log.warn(`MALICIOUS VERIFIER MODE: ${v.behaviour.name} — decisions are not verified (tests and demos only)`, {
      behaviour: v.behaviour.name,
    });
  }
  log.info("verifier started", {
    signer: v.address,
    escrow: v.config.escrow,
    safe: v.config.safe,
    samples: v.config.samples,
    behaviour: v.config.behaviour,
    dryRun: v.config.dryRun,
  });
  const tick = async () => {
    try {
      const s = await v.tick();
      if (s.decided || s.errors) log.info("tick", s);
    } catch (err) {
      // The chain could not be read: nothing was decided, the next tick reads again.
      log.warn("tick failed; retrying", { error: (err as Error)?.message ?? String(err) });
    }
  };
  const signal = opts.signal ?? new AbortController().signal;
  const once = opts.once ?? false;
  // opts.wait (decisions pushed): a ChainWake, so a CheckpointReported wakes the verifier at once, not after pollMs.
  const loop = { name: "verifier", tick, intervalMs: v.config.pollMs, once, signal, logger: log, announce: false };
  await runLoop({ ...loop, wait: opts.wait });
  log.info("verifier stopped");
}
