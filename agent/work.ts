/**
 * Working one assigned job at one epoch. Every round re-reads the job from the chain and resumes from what the chain
 * says (the accepted checkpoint, or our own undecided one to keep training while the verifiers decide); nothing
 * local survives a round except the trainer. Fencing is checked between steps and before every write.
 */
import type { JobView } from "../sdk/job.ts";
import type { Logger } from "../sdk/log.ts";
import { sleep } from "../sdk/retry.ts";
import {
  defaultSegmentSteps,
  encodeState,
  initialState,
  loadTemplate,
  storedSteps,
  UnknownTemplateError,
  ZERO_HASH,
  type Template,
  type TrainingState,
} from "../workloads/index.ts";
import { loadCheckpoint, putUpload } from "./blobs.ts";
import { isFenceRejection, type Chain } from "./chain.ts";
import { fenceReason, pendingUsable, planJob, reportDecision, segmentTarget } from "./decide.ts";
import type { OldCheckpoint, ProviderBehaviour } from "./behaviour.ts";
import type { Liveness } from "./liveness.ts";
import type { Progress } from "./progress.ts";
import type { Upload } from "./segment.ts";
import { isAbandoned, trainSegment } from "./train.ts";
import type { TrainerPool } from "./trainers.ts";
import type { AgentConfig, AgentDeps } from "./types.ts";
import { BackgroundUploads } from "./uploads.ts";

export interface WorkContext {
  config: AgentConfig;
  deps: AgentDeps;
  chain: Chain;
  me: string;
  logger: Logger;
  liveness: Liveness;
  progress: Progress;
  trainers: TrainerPool;
  behaviour: ProviderBehaviour;
}

/** How working one job at one epoch ended. */
export type JobEnd = "fenced" | "done" | "declined" | "stopped";

export class DiedError extends Error {}

/** Where the next segment starts: a committed checkpoint (accepted, or our pending one) and its state. */
interface Base {
  step: number;
  hash: string;
  state: TrainingState;
  old?: OldCheckpoint;
}

type BaseResult = { kind: "base"; base: Base } | { kind: "wait" } | { kind: "decline"; reason: string };

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
    await ctx.trainers.get(template);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    log.error("declining job: its steps do not fit the offered device memory", { reason: err.message });
    return "declined";
  }
  ctx.liveness.set({ jobId: id, epoch, step: first.acceptedStep });
  log.info("working job", {
    template: template.descriptor.name,
    totalSteps: first.totalSteps,
    interval: first.checkpointInterval,
    resumeStep: first.acceptedStep,
  });
  let last: { step: number; hash: string } | undefined;
  while (!ctx.deps.signal.aborted) {
    const job = await ctx.chain.job(id);
    const plan = planJob(job);
    if (plan.kind === "done") {
      log.info("job complete: every step accepted", { step: job.acceptedStep });
      ctx.liveness.set(undefined);
      return "done";
    }
    const fenced = fenceReason(job, epoch, ctx.me);
    if (fenced) return onFenced(ctx, job, epoch, fenced, last);
    const based = plan.kind === "train" ? await resolveBase(ctx, job, template) : { kind: "wait" as const };
    if (based.kind === "decline") {
      log.error("declining job: cannot resume", { reason: based.reason });
      ctx.liveness.set(undefined);
      return "declined";
    }
    if (based.kind === "wait") {
      await sleep(ctx.config.pollMs, ctx.deps.signal);
      continue;
    }
    const r = await trainAndReport(ctx, log, job, template, based.base);
    if (r.reported) last = r.reported;
    if (r.outcome) {
      if (r.outcome === "fenced") return onFenced(ctx, r.job ?? job, epoch, r.reason ?? "fenced", last ?? r.upload);
      return r.outcome;
    }
  }
  return "stopped";
}

async function resolveBase(ctx: WorkContext, job: JobView, template: Template): Promise<BaseResult> {
  const acceptedHash = job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash;
  if (pendingUsable(job)) {
    // Our own undecided checkpoint: train on while the verifiers decide (reported only once it is accepted).
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
  const a = await loadCheckpoint(ctx.deps.store, job.acceptedHash);
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

interface RoundResult {
  outcome?: JobEnd;
  reason?: string;
  job?: JobView;
  reported?: { step: number; hash: string };
  upload?: { step: number; hash: string };
}

/** One segment: train (checking fencing between steps), upload, wait for the base to be accepted, report. */
async function trainAndReport(
  ctx: WorkContext,
  log: Logger,
  job: JobView,
  template: Template,
  base: Base,
): Promise<RoundResult> {
  const { jobId: id, epoch } = job;
  const trainer = await ctx.trainers.get(template);
  const end = segmentTarget(base.step, job.checkpointInterval, job.totalSteps);
  let fenced: { reason: string; job: JobView } | undefined;
  const t0 = ctx.deps.clock.now();
  let trained = 0;
  let checkedAt = Number.NEGATIVE_INFINITY;
  // Segment-boundary states go to the store in the background while training goes on (agent/uploads.ts).
  const uploads = new BackgroundUploads(ctx.deps.store);
  const boundaries = new Set(storedSteps(base.step, end, defaultSegmentSteps(end - base.step)));
  const seg = await trainSegment(
    trainer,
    { templateId: job.templateId, seed: job.seed, prevCheckpointHash: base.hash, start: base.state },
    end,
    ctx.behaviour,
    {
      beforeStep: async () => {
        if (ctx.deps.signal.aborted) return false;
        if (ctx.deps.clock.now() - checkedAt < ctx.config.fenceCheckMs) return true;
        checkedAt = ctx.deps.clock.now();
        const now = await ctx.chain.job(id);
        const reason = fenceReason(now, epoch, ctx.me);
        if (reason) fenced = { reason, job: now };
        return !reason;
      },
      afterStep: async (step, loss, state) => {
        if (boundaries.has(step)) await uploads.offer(encodeState(state));
        trained++;
        const sps = (1000 * trained) / Math.max(1, ctx.deps.clock.now() - t0);
        ctx.liveness.update({ step, loss, stepsPerSecond: sps });
        ctx.progress.update({ jobId: id, epoch, step, totalSteps: job.totalSteps, loss, stepsPerSecond: sps });
      },
      die: (step) => {
        log.error("injected fault die-at: killing this process mid-interval", { step });
        (ctx.deps.die ?? (() => process.kill(process.pid, "SIGKILL")))(step);
        throw new DiedError(`died at step ${step}`);
      },
    },
  );
  if (isAbandoned(seg)) {
    if (fenced) return { outcome: "fenced", reason: fenced.reason, job: fenced.job };
    log.info("stopping: abandoned the current step", { step: seg.atStep });
    return { outcome: "stopped" };
  }
  const upload = ctx.behaviour.upload(seg, base.old);
  const trainedMs = ctx.deps.clock.now() - t0;
  const t1 = performance.now();
  // The checkpoint blob goes up while the last boundary puts finish.
  await Promise.all([uploads.drain(), putUpload(ctx.deps.store, upload, uploads.put)]);
  log.info("checkpoint stored", {
    step: upload.step,
    hash: upload.reportedHash,
    startStep: base.step,
    faults: upload.faults.length ? upload.faults : undefined,
    states: upload.stateBlobs.length,
    storeWaitMs: Math.round(uploads.stallMs + performance.now() - t1),
    trainedMs,
  });
  return report(ctx, log, id, epoch, base, upload);
}

async function report(
  ctx: WorkContext,
  log: Logger,
  id: bigint,
  epoch: bigint,
  base: Base,
  upload: Upload,
): Promise<RoundResult> {
  const mine = { step: upload.step, hash: upload.reportedHash };
  while (!ctx.deps.signal.aborted) {
    const job = await ctx.chain.job(id);
    const d = reportDecision(job, { epoch, me: ctx.me, startStep: base.step, prevHash: base.hash, step: upload.step });
    if (d.kind === "fenced") return { outcome: "fenced", reason: d.reason, job, upload: mine };
    if (d.kind === "discard") {
      log.warn("discarding trained segment", { reason: d.reason, step: upload.step });
      return {};
    }
    if (d.kind === "wait") {
      await sleep(ctx.config.pollMs, ctx.deps.signal);
      continue;
    }
    const { escrow } = ctx.chain.protocol;
    const r = await ctx.chain.write("reportCheckpoint", () =>
      escrow.reportCheckpoint(id, epoch, upload.step, upload.reportedHash),
    );
    if (r.ok) {
      log.info("checkpoint reported", { step: upload.step, hash: upload.reportedHash, tx: r.hash });
      return { reported: mine };
    }
    if (isFenceRejection(r)) return { outcome: "fenced", reason: r.description, upload: mine };
    if (r.error === "JobEscrowCheckpointPending") continue;
    log.error("report failed", { step: upload.step, reason: r.description });
    await sleep(ctx.config.pollMs, ctx.deps.signal);
    return {};
  }
  return { outcome: "stopped" };
}

async function onFenced(
  ctx: WorkContext,
  job: JobView,
  epoch: bigint,
  reason: string,
  last: { step: number; hash: string } | undefined,
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
