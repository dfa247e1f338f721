/**
 * Working one assigned job at one epoch, without waiting on the protocol. Two loops share a bounded
 * queue of finished segments:
 * - the trainer trains segment after segment, each on the last one queued (or on the chain's tip: our own
 *   undecided checkpoint, else the accepted one), uploads it in the background and queues it; it waits only while
 *   MAX_AHEAD segments are already queued;
 * - the reporter follows the chain, woken by the job's decisions (ChainWake) or every pollMs at the latest: it
 *   reports the first queued segment as soon as its base is accepted and nothing is pending, notices acceptances,
 *   and when the chain no longer holds what the queue builds on (a refusal), drops the queued work and has the
 *   trainer abandon its segment and retrain from the accepted checkpoint.
 * The chain stays the truth: nothing local survives the job but the trainer, a restarted agent resumes from what
 * the chain says. Fencing is checked on every read and before every write.
 */
import type { JobView } from "../sdk/rules/job.ts";
import type { ChainWake } from "../sdk/node/chainWake.ts";
import type { Logger } from "../sdk/run/log.ts";
import { sleep } from "../sdk/run/retry.ts";
import { sendReport } from "./sends.ts";
import {
  defaultSegmentSteps,
  initialState,
  loadTemplate,
  storedSteps,
  UnknownTemplateError,
  ZERO_HASH,
  type Template,
  type TrainingState,
} from "../workloads/index.ts";
import type { CheckpointPrefetch } from "./prefetch.ts";
import { blobsOf, guardBlobs, loadCheckpoint, putUpload } from "./blobs.ts";
import { isFenceRejection, type Chain } from "./chain.ts";
import {
  aheadKept,
  baseLive,
  chainTip,
  fenceReason,
  MAX_AHEAD,
  pendingUsable,
  planJob,
  reportDecision,
  reportedOutcome,
  segmentTarget,
  type AheadLink,
  type Link,
} from "./decide.ts";
import type { OldCheckpoint, ProviderBehaviour } from "./behaviour.ts";
import type { Liveness } from "./liveness.ts";
import type { Problems } from "./problems.ts";
import type { Progress } from "./progress.ts";
import { hashedOnly, noteState } from "./segment.ts";
import { isAbandoned, trainSegment } from "./train.ts";
import type { TrainerPool } from "./trainers.ts";
import type { AgentConfig, AgentDeps } from "./types.ts";
import { BackgroundUploads } from "./uploads.ts";

export interface WorkContext {
  config: AgentConfig;
  deps: AgentDeps;
  chain: Chain;
  me: string;
  /** This machine's arithmetic profile (workloads/profile.ts), committed in every checkpoint it makes. */
  profile: string;
  logger: Logger;
  liveness: Liveness;
  progress: Progress;
  /** What keeps this provider from working now (agent/problems.ts); absent in tests that do not follow it. */
  problems?: Problems;
  trainers: TrainerPool;
  behaviour: ProviderBehaviour;
  /** Wakes the reporter on the escrow's decision events (absent: it polls every pollMs). */
  wake?: ChainWake;
  /** Accepted checkpoints of others' jobs, read ahead while idle (a takeover starts from memory). */
  prefetch?: CheckpointPrefetch;
}

/** How working one job at one epoch ended. */
export type JobEnd = "fenced" | "done" | "declined" | "stopped";

export class DiedError extends Error {}

/** Where a segment starts: a committed checkpoint (accepted, pending, or one of ours queued) and its state. */
interface Base extends Link {
  state: TrainingState;
  old?: OldCheckpoint;
}

/** A checkpoint we reported: kept until it is decided and no longer the tip (its state is the next base). */
interface Reported extends AheadLink {
  state: TrainingState;
  old: OldCheckpoint;
  accepted?: boolean;
  blobs: Uint8Array[];
  reportedAt: number;
  guardedAt?: number;
  /** The report's transaction (absent when the chain took it without ours: re-included, or sent before a restart). */
  tx?: string;
}

/** A trained segment, uploading or stored, waiting for its base to be accepted. */
interface Finished extends AheadLink {
  state: TrainingState;
  old: OldCheckpoint;
  /** Resolves once every blob is stored; rejects when the store gave up. */
  stored: Promise<void>;
  /** The blobs the report needs in the store, kept until its decision (guardBlobs). */
  blobs: Uint8Array[];
}

/**
 * A report still undecided this long after it was sent has its blobs checked in the store, and again this often
 * (a store writer may have overwritten or removed one, agent/blobs.ts). Not at once: most decisions land within
 * seconds, and reading back a checkpoint's states after every report (8.6 MB per interval of 100 MNIST steps: ~21 gets
 * of ~7.5 ms from the embedded S3 server, plus hashing, against ~2.3 s of training) is work taken from training for
 * nothing in the usual case. An overwritten blob holds the verifiers for their 30 s grace, so a first check at 10 s
 * still repairs it in time.
 */
export const GUARD_AFTER_MS = 10_000;
export const GUARD_EVERY_MS = 5_000;

type BaseResult = { kind: "base"; base: Base } | { kind: "wait" } | { kind: "decline"; reason: string };

interface End {
  outcome: JobEnd;
  reason?: string;
  job?: JobView;
}

export async function workJob(ctx: WorkContext, first: JobView): Promise<JobEnd> {
  const { jobId: id, epoch } = first;
  const log = ctx.logger.child({ job: id, epoch });
  let template: Template;
  try {
    template = loadTemplate(first.templateId);
  } catch (err) {
    if (!(err instanceof UnknownTemplateError)) throw err;
    log.error("declining job: unknown workload template; not heartbeating it, so the coordinator reassigns it", {
      templateId: first.templateId,
    });
    return "declined";
  }
  try {
    ctx.trainers.check(template);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    log.error("declining job: its steps do not fit the offered device memory", { reason: err.message });
    return "declined";
  }
  // Beat for the job from the assignment on, also while its trainer loads: the load yields to the event loop
  // (workloads/data.ts loadDatasetAsync), so beats still go out, late by at most one digit's parse (gaps of
  // 0.3–0.55 s measured against the 250 ms period, inside the timeout). Beating only after the load let a slow
  // load at high load outlast the coordinator's first-beat grace (the false-failover soak, bench/soak.ts).
  ctx.liveness.set({ jobId: id, epoch, step: first.acceptedStep });
  try {
    await ctx.trainers.get(template);
  } catch (err) {
    ctx.liveness.set(undefined);
    throw err;
  }
  log.info("working job", {
    template: template.descriptor.name,
    totalSteps: first.totalSteps,
    interval: first.checkpointInterval,
    resumeStep: first.acceptedStep,
  });
  const end = await new JobRun(ctx, log, first, template).work();
  if (end.outcome === "fenced") return onFenced(ctx, end.job ?? first, epoch, end.reason ?? "fenced", end.last);
  if (end.outcome === "done" || end.outcome === "declined") ctx.liveness.set(undefined);
  return end.outcome;
}

/** The agent's own record of one job's time (logged as "training record" when the job ends here). */
interface Record {
  startedAt?: number;
  /** Last time a segment reaching the final step finished training (work remained until then). */
  lastTrainedAt?: number;
  trainMs: number;
  /** Waiting with training left to do: queue full, base not known yet, store back-pressure. */
  waitMs: number;
  /** Building checkpoints (hash chain, encoding) between segments. */
  buildMs: number;
  segments: number;
  dropped: number;
  trainedSteps: number;
}

class JobRun {
  private ctx: WorkContext;
  private log: Logger;
  private id: bigint;
  private epoch: bigint;
  private template: Template;
  private queue: Finished[] = [];
  /** Checkpoints we reported and have not seen decided (kept with their state to build on without a store read). */
  private reported: Reported[] = [];
  private lastReported?: Link;
  /** The latest job view the reporter read. */
  private view: JobView;
  /** The base the trainer is on right now, and the generation it started in (a drop bumps it). */
  private training?: Link;
  private generation = 0;
  private ended?: End & { last?: Link };
  private kicks = new Set<() => void>();
  private record: Record = { trainMs: 0, waitMs: 0, buildMs: 0, segments: 0, dropped: 0, trainedSteps: 0 };

  constructor(ctx: WorkContext, log: Logger, first: JobView, template: Template) {
    this.ctx = ctx;
    this.log = log;
    this.id = first.jobId;
    this.epoch = first.epoch;
    this.template = template;
    this.view = first;
  }

  async work(): Promise<End & { last?: Link }> {
    let failed: { err: unknown } | undefined;
    const trainer = this.trainLoop().catch((err) => {
      failed = { err }; // a DiedError (die-at) among others: rethrown once the reporter stopped
      this.finish({ outcome: "stopped" });
    });
    try {
      await this.reportLoop();
    } catch (err) {
      failed ??= { err };
      this.finish({ outcome: "stopped" });
    }
    await trainer;
    if (failed) throw failed.err;
    this.logRecord();
    return this.ended ?? { outcome: "stopped" };
  }

  private get now() {
    return this.ctx.deps.clock.now();
  }

  private finish(end: End): void {
    this.ended ??= { ...end, last: this.lastReported ?? this.queue[0] };
    this.kick();
  }

  /** Wakes whoever waits locally (the trainer for room in the queue, the reporter for a new segment). */
  private kick(): void {
    for (const k of this.kicks) k();
  }

  /** Sleeps `ms` at most; a kick, the stop signal or (with `chain`) a decision event on chain ends it early. */
  private async nap(ms: number, chain = false): Promise<void> {
    const stop = new AbortController();
    const done = () => stop.abort();
    this.kicks.add(done);
    const signal = AbortSignal.any([this.ctx.deps.signal, stop.signal]);
    try {
      if (this.ended) return;
      await (chain && this.ctx.wake ? this.ctx.wake.sleep(ms, signal) : sleep(ms, signal));
    } finally {
      this.kicks.delete(done);
    }
  }

  // ------------------------------------------------------------------ reporter

  private async reportLoop(): Promise<void> {
    const { config, deps } = this.ctx;
    while (!this.ended) {
      if (deps.signal.aborted) return this.finish({ outcome: "stopped" });
      const job = await this.ctx.chain.job(this.id);
      this.view = job;
      if (planJob(job).kind === "done") {
        await this.noticeDecisions(job);
        this.log.info("job complete: every step accepted", { step: job.acceptedStep });
        return this.finish({ outcome: "done" });
      }
      const fenced = fenceReason(job, this.epoch, this.ctx.me);
      if (fenced) return this.finish({ outcome: "fenced", reason: fenced, job });
      await this.noticeDecisions(job);
      this.reconcile(job);
      await this.guardReported();
      if (await this.reportHead(job)) continue;
      await this.nap(Math.min(config.pollMs, config.fenceCheckMs), true);
    }
  }

  /**
   * Logs what became of each checkpoint we reported (the moment the agent notices, for the latency figures). The
   * chain decides, also backwards: an acceptance a reorganisation removed makes the checkpoint pending again (its
   * blobs guarded again, its acceptance logged again when it comes back), and a report whose transaction is no
   * longer on chain at all (a reorganisation removed its block; a refusal or a lapse leaves it there) goes back to
   * the head of the queue, to be reported again as it is, with the work trained on it kept.
   */
  private async noticeDecisions(job: JobView): Promise<void> {
    const vanished: Reported[] = [];
    const kept: Reported[] = [];
    for (const r of this.reported) {
      const outcome = reportedOutcome(job, r);
      if (outcome === "accepted" && !r.accepted) this.log.info("checkpoint accepted", { step: r.step, hash: r.hash });
      if (outcome !== "accepted" && r.accepted)
        this.log.warn("checkpoint acceptance gone from the chain (reorganisation)", { step: r.step, hash: r.hash });
      r.accepted = outcome === "accepted";
      if (outcome === "dropped" && (await this.reportGone(r))) vanished.push(r);
      else if (outcome === "dropped")
        this.log.warn("checkpoint not accepted (refused, lapsed or dropped)", { step: r.step, hash: r.hash });
      // The accepted one stays while it is the tip: the next segment may build on it without a store read.
      else if (outcome === undefined || job.acceptedStep === r.step) kept.push(r);
    }
    this.reported = kept;
    if (vanished.length === 0) return;
    this.log.warn("report removed by a chain reorganisation: reporting it again", {
      steps: vanished.map((r) => r.step),
    });
    const again = vanished.map(({ step, hash, prev, state, old, blobs }) => {
      return { step, hash, prev, state, old, blobs, stored: Promise.resolve() };
    });
    this.queue.unshift(...again.sort((a, b) => a.step - b.step));
    this.kick();
  }

  /** Whether our report's transaction is no longer on chain (no receipt): removed by a reorganisation. */
  private async reportGone(r: Reported): Promise<boolean> {
    const provider = this.ctx.deps.signer.provider;
    if (!r.tx || !provider) return false;
    return (await this.ctx.chain.read("report receipt", () => provider.getTransactionReceipt(r.tx!))) === null;
  }

  /**
   * Queued segments the chain already holds (pending or accepted: a report re-included after a reorganisation, or
   * re-sent by the node) count as reported: never sent again.
   */
  private takenByChain(job: JobView): void {
    for (let head = this.queue[0]; head; head = this.queue[0]) {
      const pending = job.pendingStep === head.step && job.pendingHash === head.hash;
      const accepted = job.acceptedStep === head.step && job.acceptedHash === head.hash;
      if (!pending && !accepted) return;
      this.queue.shift();
      this.lastReported = { step: head.step, hash: head.hash };
      const { step, hash, prev, state, old, blobs } = head;
      this.reported.push({ step, hash, prev, state, old, blobs, reportedAt: this.now });
    }
  }

  /**
   * Keeps the blobs of each undecided report in the store: checked GUARD_AFTER_MS after the report and every
   * GUARD_EVERY_MS after that, put again where missing or overwritten. A store error is logged and tried at the next round.
   */
  private async guardReported(): Promise<void> {
    for (const r of this.reported) {
      if (r.accepted || this.now - r.reportedAt < GUARD_AFTER_MS) continue;
      if (r.guardedAt !== undefined && this.now - r.guardedAt < GUARD_EVERY_MS) continue;
      r.guardedAt = this.now;
      try {
        const repaired = await guardBlobs(this.ctx.deps.store, r.blobs);
        if (repaired > 0)
          this.log.warn("reported checkpoint's blobs were gone or overwritten; put again", {
            step: r.step,
            hash: r.hash,
            repaired,
          });
      } catch (err) {
        this.log.warn("could not check a reported checkpoint's blobs; trying again", {
          step: r.step,
          error: (err as Error)?.message,
        });
      }
    }
  }

  /** Drops queued segments the chain's tip no longer leads to; a segment in training on a dropped base stops. */
  private reconcile(job: JobView): void {
    this.takenByChain(job);
    const tip = chainTip(job);
    const kept = aheadKept(tip, this.queue);
    if (kept < this.queue.length) {
      const gone = this.queue.splice(kept);
      this.record.dropped += gone.length;
      this.log.warn("dropping segments trained ahead: the checkpoint under them is gone", {
        steps: gone.map((g) => g.step),
        tip: tip.step,
      });
      this.kick();
    }
    if (this.training && !baseLive(this.training, tip, this.queue)) {
      this.generation++;
      this.kick();
    }
  }

  /** Reports the first queued segment if the chain takes it now; true when something was written. */
  private async reportHead(job: JobView): Promise<boolean> {
    const head = this.queue[0];
    if (!head) return false;
    const d = reportDecision(job, {
      epoch: this.epoch,
      me: this.ctx.me,
      startStep: head.prev.step,
      prevHash: head.prev.hash,
      step: head.step,
    });
    if (d.kind !== "report") return false;
    try {
      await head.stored;
    } catch (err) {
      this.log.error("checkpoint upload failed; retraining the segment", {
        step: head.step,
        error: (err as Error)?.message,
      });
      this.ctx.problems?.set("store", `checkpoint store unreachable: ${(err as Error)?.message ?? String(err)}`);
      this.queue.splice(0);
      this.generation++;
      this.kick();
      return true;
    }
    const { escrow } = this.ctx.chain.protocol;
    const r = await this.ctx.chain.write("reportCheckpoint", () =>
      sendReport(escrow, this.id, this.epoch, head.step, head.hash),
    );
    this.ctx.problems?.clear("store"); // its blobs are in the store
    if (r.ok) {
      this.log.info("checkpoint reported", { step: head.step, hash: head.hash, tx: r.hash, queued: this.queue.length });
      this.queue.shift();
      this.lastReported = { step: head.step, hash: head.hash };
      const { step, hash, prev, state, old, blobs } = head;
      this.reported.push({ step, hash, prev, state, old, blobs, reportedAt: this.now, tx: r.hash || undefined });
      this.kick();
      return true;
    }
    if (isFenceRejection(r)) {
      this.finish({ outcome: "fenced", reason: r.description });
      return true;
    }
    if (r.error === "JobEscrowCheckpointPending") return true;
    this.log.error("report failed", { step: head.step, reason: r.description });
    await this.nap(this.ctx.config.pollMs);
    return true;
  }

  // ------------------------------------------------------------------ trainer

  private async trainLoop(): Promise<void> {
    const total = this.view.totalSteps;
    while (!this.ended) {
      if (this.ctx.deps.signal.aborted) return this.finish({ outcome: "stopped" }); // a nap would not wait now
      const t0 = this.now;
      const based = this.queue.length >= MAX_AHEAD ? { kind: "wait" as const } : await this.nextBase();
      if (based.kind === "decline") {
        this.log.error("declining job: cannot resume", { reason: based.reason });
        return this.finish({ outcome: "declined" });
      }
      if (based.kind === "wait" || based.base.step >= total) {
        await this.nap(this.ctx.config.pollMs);
        // Only waits with training left count against the provider (not the wait for the final decision).
        if (based.kind === "wait" && this.record.startedAt !== undefined) this.record.waitMs += this.now - t0;
        continue;
      }
      if (this.record.startedAt !== undefined) this.record.waitMs += this.now - t0;
      await this.trainOne(based.base);
    }
  }

  /** The last queued segment; else the chain's tip, from memory when we reported it, else from the store. */
  private async nextBase(): Promise<BaseResult> {
    const tail = this.queue.at(-1);
    if (tail) return { kind: "base", base: { step: tail.step, hash: tail.hash, state: tail.state, old: tail.old } };
    const job = this.view;
    if (planJob(job).kind !== "train") return { kind: "wait" };
    const tip = chainTip(job);
    // Our newest report: the tip, or newer than the view (reported since it was read; the reporter's next read
    // abandons the segment if the chain refuses it meanwhile).
    const mine = this.reported.reduce<(typeof this.reported)[number] | undefined>(
      (a, r) => (a && a.step > r.step ? a : r),
      undefined,
    );
    if (mine && (mine.step > tip.step || mine.hash === tip.hash)) return { kind: "base", base: mine };
    return resolveBase(this.ctx, job, this.template);
  }

  private async trainOne(base: Base): Promise<void> {
    const { ctx } = this;
    const job = this.view;
    const generation = this.generation;
    const resuming = this.record.segments === 0 && base.step > 0;
    const end = segmentTarget(base.step, job.checkpointInterval, job.totalSteps, resuming);
    this.training = base;
    const t0 = this.now;
    this.record.startedAt ??= t0;
    let trained = 0;
    // Segment-boundary states go to the store in the background while training goes on (agent/uploads.ts).
    const uploads = new BackgroundUploads(ctx.deps.store);
    const boundaries = new Set(storedSteps(base.step, end, defaultSegmentSteps(end - base.step)));
    const seg = await trainSegment(
      await ctx.trainers.get(this.template),
      {
        templateId: job.templateId,
        seed: job.seed,
        prevCheckpointHash: base.hash,
        start: base.state,
        maker: ctx.me,
        profile: ctx.profile,
      },
      end,
      ctx.behaviour,
      {
        beforeStep: () => !this.ended && !ctx.deps.signal.aborted && generation === this.generation,
        retire: hashedOnly, // boundary states keep their bytes (noteState), the others only their hash
        afterStep: async (step, loss, state) => {
          // Hashed now, step by step (the checkpoint's build at the end then only looks the hashes up); only a
          // boundary state is encoded, for its upload.
          const bytes = noteState(state, boundaries.has(step));
          if (bytes) await uploads.offer(bytes);
          trained++;
          this.record.trainedSteps++;
          // --step-log: the agent's own record of every trained step (debug; the exact lost-work figure).
          if (ctx.config.stepLog) this.log.log("debug", "trained", { step });
          const sps = (1000 * trained) / Math.max(1, this.now - t0);
          ctx.liveness.update({ step, loss, stepsPerSecond: sps });
          ctx.progress.update({
            jobId: this.id,
            epoch: this.epoch,
            step,
            totalSteps: job.totalSteps,
            loss,
            stepsPerSecond: sps,
          });
        },
        die: (step) => {
          this.log.error("injected fault die-at: killing this process mid-interval", { step });
          (ctx.deps.die ?? (() => process.kill(process.pid, "SIGKILL")))(step);
          throw new DiedError(`died at step ${step}`);
        },
      },
    );
    this.training = undefined;
    const trainedMs = this.now - t0;
    this.record.trainMs += trainedMs;
    if (isAbandoned(seg)) {
      if (!this.ended && !ctx.deps.signal.aborted) {
        this.log.info("abandoned a segment built on a checkpoint the chain no longer holds", { step: seg.atStep });
        this.record.dropped++;
        return;
      }
      if (!this.ended) this.log.info("stopping: abandoned the current step", { step: seg.atStep });
      return this.finish({ outcome: "stopped" });
    }
    const t1 = this.now;
    const upload = ctx.behaviour.upload(seg, base.old);
    this.record.buildMs += this.now - t1;
    this.record.segments++;
    if (end >= job.totalSteps) this.record.lastTrainedAt = this.now;
    const putAt = this.now;
    // The checkpoint blob goes up while the last boundary puts finish; the reporter waits for it, training does not.
    const stored = Promise.all([uploads.drain(), putUpload(ctx.deps.store, upload, uploads.put)]).then(() => {
      this.log.info("checkpoint stored", {
        step: upload.step,
        hash: upload.reportedHash,
        startStep: base.step,
        faults: upload.faults.length ? upload.faults : undefined,
        states: upload.stateBlobs.length,
        storeMs: Math.round(this.now - putAt),
        storeWaitMs: Math.round(uploads.stallMs),
        trainedMs,
      });
    });
    stored.catch(() => undefined); // reported (and retrained) by the reporter when it gets to this segment
    this.record.waitMs += uploads.stallMs;
    if (generation !== this.generation) return; // dropped while building: never queued
    const hash = upload.reportedHash.toLowerCase();
    this.queue.push({
      step: upload.step,
      hash,
      prev: { step: base.step, hash: base.hash.toLowerCase() },
      state: seg.states.at(-1) ?? base.state,
      old: { hash, bytes: upload.checkpointBytes },
      stored,
      blobs: blobsOf(upload),
    });
    this.kick();
  }

  private logRecord(): void {
    const r = this.record;
    if (r.startedAt === undefined) return;
    const until = r.lastTrainedAt ?? this.now;
    const wallMs = Math.max(1, until - r.startedAt);
    this.log.info("training record", {
      wallMs: Math.round(wallMs),
      trainMs: Math.round(r.trainMs),
      waitMs: Math.round(r.waitMs),
      buildMs: Math.round(r.buildMs),
      stallShare: Math.round((1000 * r.waitMs) / wallMs) / 1000,
      outsideTrainingShare: Math.round((1000 * (wallMs - r.trainMs)) / wallMs) / 1000,
      segments: r.segments,
      dropped: r.dropped,
      trainedSteps: r.trainedSteps,
      finished: r.lastTrainedAt !== undefined,
    });
  }
}

async function resolveBase(ctx: WorkContext, job: JobView, template: Template): Promise<BaseResult> {
  const acceptedHash = job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash;
  if (pendingUsable(job)) {
    // An undecided checkpoint (ours, from before a restart): train on while the verifiers decide.
    const p = await loadCheckpoint(ctx.deps.store, job.pendingHash);
    const c = p.ok ? p.checkpoint : undefined;
    const fits =
      c &&
      c.step === job.pendingStep &&
      c.templateId === job.templateId &&
      c.seed === job.seed &&
      c.prevCheckpointHash === acceptedHash;
    if (!p.ok || !fits) return { kind: "wait" };
    return {
      kind: "base",
      base: { step: c.step, hash: job.pendingHash, state: c.state, old: { hash: job.pendingHash, bytes: p.bytes } },
    };
  }
  if (job.pendingStep !== 0) return { kind: "wait" };
  if (job.acceptedStep === 0) {
    return { kind: "base", base: { step: 0, hash: ZERO_HASH, state: initialState(template, job.seed) } };
  }
  const ahead = await ctx.prefetch?.take(job.jobId, job.acceptedHash);
  if (ahead) ctx.logger.info("resuming from a checkpoint read ahead", { job: job.jobId, step: job.acceptedStep });
  const a = ahead ?? (await loadCheckpoint(ctx.deps.store, job.acceptedHash));
  if (!a.ok) return { kind: "decline", reason: `accepted checkpoint ${job.acceptedHash}: ${a.reason}` };
  const c = a.checkpoint;
  if (c.step !== job.acceptedStep || c.templateId !== job.templateId || c.seed !== job.seed) {
    return {
      kind: "decline",
      reason: `accepted checkpoint ${job.acceptedHash} is not step ${job.acceptedStep} of this job`,
    };
  }
  return {
    kind: "base",
    base: { step: c.step, hash: job.acceptedHash, state: c.state, old: { hash: job.acceptedHash, bytes: a.bytes } },
  };
}

async function onFenced(
  ctx: WorkContext,
  job: JobView,
  epoch: bigint,
  reason: string,
  last: Link | undefined,
): Promise<JobEnd> {
  ctx.logger.warn("fenced: stopped writing to this job", { job: job.jobId, epoch, reason });
  ctx.progress.done();
  const writer = {
    chain: ctx.chain,
    logger: ctx.logger,
    signal: ctx.deps.signal,
    attempts: ctx.config.writeAfterFenceAttempts,
    pollMs: ctx.config.pollMs,
  };
  await ctx.behaviour.afterFenced(writer, job, epoch, last);
  ctx.liveness.set(undefined);
  return "fenced";
}
