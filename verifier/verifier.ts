/**
 * One Quality Guard verifier as a keeper (../shared/STYLE.md 13-14): a config built and validated once, a tick
 * that rebuilds pending work from chain state (`jobCount`, `jobOf`, `statusOf`), decides each item with
 * checks.ts, signs the escrow digest as a Safe owner and posts the signature to the collector, and a runner that
 * never overlaps ticks and stops on its signal. All I/O (chain, store, collector, clock, logger) is injected.
 *
 * Every tick re-posts the signature of every decision the chain still waits for, so the collector may restart at
 * any time. A report is decided once: the decision is cached by (job, epoch, step, hash) and never replaced by
 * another (DecisionStore). Reports from fenced workers never reach the verifier: the chain keeps only the pending
 * checkpoint of the current epoch.
 */
import type { Signer, TypedDataDomain } from "ethers";
import { escrowDomain, signAsSafeOwner } from "../sdk/verifierSignatures.ts";
import type { Logger } from "../sdk/log.ts";
import { sleep } from "../sdk/retry.ts";
import {
  createTrainer, loadTemplate, UnknownTemplateError, type CheckpointStore, type Template, type Trainer,
} from "../workloads/index.ts";
import { DEFAULT_ABSTAIN_AFTER_MS, OutageTracker } from "./outage.ts";
import {
  CannotVerifyError, StoreOutageError, newVerifyCache, verifyCheckpoint, verifyFinal, type CheckpointVerdict, type VerifyCache,
} from "./checks.ts";
import type { SignaturePoster } from "./collector.ts";
import type { DecisionStore } from "./decisions.ts";
import {
  checkpointMessage, digestOf, isFinished, planWork, sampleSalt, verdictMessage,
  type CheckpointItem, type Decision, type JobRecord, type JobView, type VerdictItem, type WorkItem,
} from "./work.ts";

export const BEHAVIOURS = ["honest", "always-accept", "always-refuse"] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

export type VerifierConfig = {
  chainId: bigint;
  escrow: string;
  safe: string;
  /** Sampled steps replayed per checkpoint, besides the last step. */
  samples: number;
  /** `honest` verifies; the other two are malicious verifiers for tests and demos, logged loudly. */
  behaviour: Behaviour;
  /** Decide and log, but post nothing. */
  dryRun: boolean;
  pollMs: number;
  /** How long a reported blob may be missing from the store before the report is refused. */
  missingBlobGraceMs: number;
  /** How long the store may fail to answer for an item before the verifier says it abstains (it never refuses). */
  abstainAfterMs?: number;
};

export const DEFAULT_CONFIG = { samples: 4, behaviour: "honest", dryRun: false, pollMs: 2_000, missingBlobGraceMs: 30_000 } as const;

export function validateConfig(c: VerifierConfig): VerifierConfig {
  if (!Number.isSafeInteger(c.samples) || c.samples < 0) throw new RangeError(`samples must be a non-negative integer, got ${c.samples}`);
  if (!BEHAVIOURS.includes(c.behaviour)) throw new RangeError(`behaviour must be one of ${BEHAVIOURS.join(", ")}`);
  if (!(c.pollMs > 0)) throw new RangeError("pollMs must be positive");
  return Object.freeze({ ...c });
}

/** The escrow views the verifier reads (a connected JobEscrow contract satisfies it). */
export interface EscrowReader {
  jobCount(): Promise<bigint>;
  jobOf(jobId: bigint): Promise<JobRecord>;
  statusOf(jobId: bigint): Promise<bigint>;
}

export type VerifierDeps = {
  chain: EscrowReader;
  /** The verifier's key: signs as a Safe owner; its private key also keys the sampling salt. */
  signer: Signer & { privateKey: string; address: string };
  store: CheckpointStore;
  collector: SignaturePoster;
  decisions: DecisionStore;
  log: Logger;
  now?: () => number;
};

/** `abstaining`: items whose store reads have failed past the bound (logged; nothing is signed for them). */
export type TickSummary = {
  items: number; decided: number; posted: number; waiting: number; errors: number; abstaining: number;
};

/** State one verifier keeps between ticks (all of it rebuildable: losing it only costs re-verification). */
export class Verifier {
  readonly config: VerifierConfig;
  private deps: VerifierDeps;
  private domain: TypedDataDomain;
  private trainers = new Map<string, Promise<{ template: Template; trainer: Trainer }>>();
  private cache: VerifyCache = newVerifyCache();
  private finished = new Set<bigint>();
  private firstMissing = new Map<string, number>();
  private outages: OutageTracker;
  private now: () => number;

  constructor(config: VerifierConfig, deps: VerifierDeps) {
    this.config = validateConfig(config);
    this.deps = deps;
    this.domain = escrowDomain(config.chainId, config.escrow);
    this.now = deps.now ?? Date.now;
    this.outages = new OutageTracker(config.abstainAfterMs ?? DEFAULT_ABSTAIN_AFTER_MS);
  }

  get address(): string {
    return this.deps.signer.address;
  }

  /** Reads every unfinished job. Throws when the chain cannot be read (the runner retries next tick). */
  async readJobs(): Promise<JobView[]> {
    const { chain } = this.deps;
    const count = await chain.jobCount();
    const views: JobView[] = [];
    for (let jobId = 1n; jobId <= count; jobId++) {
      if (this.finished.has(jobId)) continue;
      const [status, job] = await Promise.all([chain.statusOf(jobId), chain.jobOf(jobId)]);
      if (isFinished(Number(status))) this.finished.add(jobId);
      else views.push({ jobId, status: Number(status), job });
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
    for (const item of items) {
      try {
        let decision = this.deps.decisions.get(item.key);
        if (!decision) {
          decision = await this.decide(item);
          if (this.outages.recovered(item.key)) this.deps.log.info("store readable again", { job: item.jobId, key: item.key });
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
      const msg = o.abstaining ? "abstaining: store unreachable (not a refusal; still retrying)" : "store unreachable; retrying";
      const level = o.firstAbstain ? "error" : "warn";
      this.deps.log[level](msg, { ...fields, outageMs: o.sinceMs });
    } else if (err instanceof CannotVerifyError) this.deps.log.warn("cannot verify yet", fields);
    else this.deps.log.error("item failed", fields);
  }

  private async decide(item: WorkItem): Promise<Decision | undefined> {
    return item.kind === "checkpoint" ? this.decideCheckpoint(item) : this.decideVerdict(item);
  }

  private async trainerFor(templateId: string): Promise<{ template: Template; trainer: Trainer }> {
    let entry = this.trainers.get(templateId);
    if (!entry) {
      entry = (async () => {
        const template = loadTemplate(templateId);
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

  private async checkpointVerdict(item: CheckpointItem): Promise<CheckpointVerdict> {
    if (this.config.behaviour !== "honest") {
      const accept = this.config.behaviour === "always-accept";
      return {
        accept, reasons: [`behaviour: ${this.config.behaviour} (not verified)`], codes: ["behaviour"],
        metrics: {
          accuracy: null, loss: null, baselineAccuracy: null, replayedSteps: 0, intervalSteps: item.step - item.acceptedStep,
          cpuMs: 0, stepCpuMs: null, trainingCpuMsEstimate: null, fullReplay: false, notes: [],
        },
      };
    }
    const { template, trainer } = await this.trainerFor(item.templateId);
    return verifyCheckpoint({
      template, trainer, store: this.deps.store, cache: this.cache,
      job: { seed: item.seed, templateId: item.templateId, acceptedStep: item.acceptedStep, acceptedHash: item.acceptedHash },
      report: { step: item.step, hash: item.hash },
      sampleSalt: sampleSalt(this.deps.signer.privateKey, this.config.chainId, this.config.escrow, item),
      samples: this.config.samples,
    });
  }

  private async decideCheckpoint(item: CheckpointItem): Promise<Decision | undefined> {
    const v = await this.checkpointVerdict(item);
    if (!v.accept && v.codes.every((c) => c === "blob-missing")) {
      const first = this.firstMissing.get(item.key) ?? this.now();
      this.firstMissing.set(item.key, first);
      if (this.now() - first < this.config.missingBlobGraceMs) {
        this.deps.log.warn("checkpoint blob not in the store yet; waiting", { job: item.jobId, epoch: item.epoch, step: item.step, hash: item.hash });
        return undefined;
      }
    }
    const { message, typed } = checkpointMessage(item, v.accept);
    const digest = digestOf(this.domain, { kind: "checkpoint", typed });
    const signature = await signAsSafeOwner(this.deps.signer, this.config.chainId, this.config.safe, digest);
    const m = v.metrics;
    this.deps.log.info("checkpoint decided", {
      job: item.jobId, epoch: item.epoch, step: item.step, hash: item.hash,
      action: v.accept ? "accept" : "refuse", reasons: v.reasons, notes: m.notes,
      accuracy: m.accuracy, baselineAccuracy: m.baselineAccuracy, replayedSteps: m.replayedSteps,
      intervalSteps: m.intervalSteps, fullReplay: m.fullReplay, cpuMs: round(m.cpuMs),
      trainingCpuMs: m.trainingCpuMsEstimate === null ? null : round(m.trainingCpuMsEstimate),
      computeRatio: m.trainingCpuMsEstimate ? round(m.cpuMs / m.trainingCpuMsEstimate) : null,
      behaviour: this.config.behaviour, dryRun: this.config.dryRun,
    });
    return { key: item.key, decidedAt: this.now(), body: { kind: "checkpoint", message, digest, signer: this.address, signature } };
  }

  private async decideVerdict(item: VerdictItem): Promise<Decision | undefined> {
    const { template, trainer } = await this.trainerFor(item.templateId);
    const v = await verifyFinal({
      template, trainer, store: this.deps.store, cache: this.cache,
      job: { seed: item.seed, templateId: item.templateId, acceptedStep: item.totalSteps, acceptedHash: item.modelHash, totalSteps: item.totalSteps },
    });
    // A malicious verifier lies about the outcome; the metric is still measured (a made-up metric would only fail
    // to combine with anyone's signature).
    const passed = this.config.behaviour === "honest" ? v.passed : this.config.behaviour === "always-accept";
    const { message, typed } = verdictMessage(item, v.metric, passed);
    const digest = digestOf(this.domain, { kind: "verdict", typed });
    const signature = await signAsSafeOwner(this.deps.signer, this.config.chainId, this.config.safe, digest);
    this.deps.log.info("verdict decided", {
      job: item.jobId, modelHash: item.modelHash, action: "verdict", passed, metric: v.metric, accuracy: v.accuracy,
      reasons: v.reasons, cpuMs: round(v.cpuMs), behaviour: this.config.behaviour, dryRun: this.config.dryRun,
    });
    return { key: item.key, decidedAt: this.now(), body: { kind: "verdict", message, digest, signer: this.address, signature } };
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
 * Runs ticks until `signal` aborts (or once). Ticks never overlap: the next one starts `pollMs` after the previous
 * one ended. A tick that fails as a whole (chain unreachable) is logged and retried after the poll interval.
 */
export async function runVerifier(v: Verifier, log: Logger, opts: { signal?: AbortSignal; once?: boolean } = {}): Promise<void> {
  if (v.config.behaviour !== "honest") {
    log.warn(`MALICIOUS VERIFIER MODE: ${v.config.behaviour} — decisions are not verified (tests and demos only)`, { behaviour: v.config.behaviour });
  }
  log.info("verifier started", {
    signer: v.address, escrow: v.config.escrow, safe: v.config.safe, samples: v.config.samples,
    behaviour: v.config.behaviour, dryRun: v.config.dryRun,
  });
  for (;;) {
    try {
      const s = await v.tick();
      if (s.decided || s.errors) log.info("tick", s);
    } catch (err) {
      log.warn("tick failed; retrying", { error: (err as Error)?.message ?? String(err) });
    }
    if (opts.once || opts.signal?.aborted) break;
    await sleep(v.config.pollMs, opts.signal);
    if (opts.signal?.aborted) break;
  }
  log.info("verifier stopped");
}
