/**
 * The coordinator's decisions, as pure functions of what it has seen (chain state + heartbeats + clock): which
 * Running job to unassign and which provider gets which Open job. No I/O here; the tick gathers the inputs.
 *
 * Assignment rule (also in keepers/README.md): a provider is eligible for an Open job when it is registered and
 * active, not waiting for a re-stake after a slash (slashed for a proven fault, no stake deposited since;
 * sdk/rules/restake.ts), not busy on a Running job (nor picked for another job in this tick), not fenced on this job, asks
 * at most the job's maxPricePerStep, the job's remaining budget covers (totalSteps − acceptedStep) × its price, its
 * device memory is at least the template's need, its free stake covers the lock `assign` takes (price ×
 * interval, at least the registry's minStake), it sent a heartbeat within the timeout, and that latest beat is
 * idle or for a job it still holds, it was never unassigned idle from this job, and it is not backing off.
 * Among the eligible: cheapest price — a track record (accepted steps) beats a new identity within
 * TRACK_RECORD_MARGIN_PCT (see rankKey) —, then most memory, then lowest address. A job that was already held idle
 * goes to proven providers (accepted steps, no idle hold since) first (provenFirst: the Sybil bound).
 *
 * Liveness means progress (decideRunning): a holder that keeps beating but shows no step progress within the
 * template's step bound, or sends no report within its interval's bound, is unassigned (progressBounds).
 */
import { describeWait, jobFit, termsRefusal, type JobTerms } from "../../sdk/rules/jobFit.ts";
import { isLive } from "../../sdk/rules/heartbeat.ts";
import { formatPrice } from "../../sdk/words/format.ts";
import type { JobView } from "../../sdk/rules/job.ts";
import { restakeLine, type SlashMark } from "../../sdk/rules/restake.ts";

/**
 * The parts of a job (sdk/rules/job.ts) the coordinator decides on. `provider` is the zero address when Open; the lease
 * is live while chain time ≤ `leaseExpiresAt` (unix seconds).
 */
export type CoordinatorJob = Pick<
  JobView,
  | "jobId"
  | "status"
  | "epoch"
  | "templateId"
  | "totalSteps"
  | "acceptedStep"
  | "pendingStep"
  | "maxPricePerStep"
  | "checkpointInterval"
  | "budget"
  | "paid"
  | "provider"
  | "leaseExpiresAt"
> &
  // The progress rule's chain facts (the tick always has them; pure tests may leave them out).
  Partial<Pick<JobView, "lastProgressAt" | "reportedAt" | "progressTimeout">>;

export interface ProviderView {
  address: string;
  pricePerStep: bigint;
  memoryMiB: number;
  active: boolean;
  registered: boolean;
  /**
   * Stake it can still lock (registry `stakeOf`: deposited − locked − unbonding). Absent: not known, no stake rule
   * (the tick always reads it; pure tests may leave it out).
   */
  stakeFree?: bigint;
}

/** The latest heartbeat the coordinator received from one provider (its own clock: receivedAt). */
export interface BeatRecord {
  receivedAt: number;
  jobId: string; // "0" when idle
  epoch: string;
  /** The arithmetic profile the beat reported (workloads/profile.ts), if any. */
  profile?: string;
}

export interface CoordinatorView {
  nowMs: number;
  /** Latest block timestamp, seconds. */
  chainTime: bigint;
  timeoutMs: number;
  /** Extra silence allowed before an assignee's first beat for its (job, epoch); see HEARTBEAT_DEFAULTS. */
  startGraceMs?: number;
  /** Whether the keeper's key holds the coordinator role (assign; unassign before the lease lapses). */
  isCoordinator: boolean;
  jobs: CoordinatorJob[];
  providers: ProviderView[];
  /** Latest beat per provider (lower-case address). */
  lastBeat: Map<string, BeatRecord>;
  /** Latest beat per `${jobId}:${epoch}:${provider lower-case}`. */
  lastJobBeat: Map<string, number>;
  /** When the coordinator first saw each Running `${jobId}:${epoch}` (the timeout runs from here until a beat). */
  watchStart: Map<string, number>;
  /** Providers fenced per job id (string). Only candidates that pass the other rules need to be known. */
  fenced: Map<string, Set<string>>;
  /** Device memory a template needs, MiB. */
  memoryNeedMiB: (templateId: string) => number;
  /**
   * Whether verifiers can replay a provider of this arithmetic profile exactly for the template (the proven-profile
   * safety net); absent: no profile rule.
   */
  profileProven?: (templateId: string, profile: string | undefined) => boolean;
  /** The registry's network minimum lock per job (`minStake`); with `stakeFree`, the stake rule. */
  minStake?: bigint;
  /**
   * Expected ms per step of this template on a device with this much memory (expectedStepMs); undefined: no
   * progress rule for it (a template this node does not know). Absent: no progress rule at all.
   */
  expectedStepMs?: (templateId: string, memoryMiB: number) => number | undefined;
  /** The progress bounds' floor (PROGRESS.FLOOR_MS unless configured). */
  progressFloorMs?: number;
  /** Highest step beaten per jobBeatKey and when a beat first showed it (heartbeats.ts). */
  jobSteps?: Map<string, StepSeen>;
  /** Per provider (lower-case): accepted steps and idle unassignments, from chain events (chainView.ts). */
  records?: Map<string, TrackRecord>;
  /**
   * Per job id (string): providers kept off it for good — they held it without a report, or their report lapsed
   * undecided — from chain events.
   */
  idleOn?: Map<string, Set<string>>;
  /** Per job id (string): providers whose hold of it ended without an accepted checkpoint, from chain events. */
  struckOn?: Map<string, Set<string>>;
  /**
   * Take a holder on probation away only when the contract prices it (decideProbation; config
   * `--newcomer-failover priced`). Absent: the same bounds for every holder.
   */
  probationPriced?: boolean;
  /** The idle back-off's base and cap, chain seconds (BACKOFF_DEFAULTS). */
  backoff?: { baseS: number; capS: number };
  /**
   * Providers slashed for a proven fault with no stake deposited since (lower-case → their latest slash), from the
   * registry's StakeSlashed and StakeDeposited events (chainView.ts, sdk/rules/restake.ts). None of them is assigned.
   * Absent: no re-stake rule (pure tests may leave it out).
   */
  restake?: Map<string, SlashMark>;
}

/** The highest step a provider's beats showed for one (job, epoch), and when it first showed it (ms). */
export interface StepSeen {
  step: number;
  at: number;
}

/** What the chain says about a provider's past work (rebuilt from events after a restart). */
export interface TrackRecord {
  /** Σ steps of its accepted checkpoints (CheckpointAccepted). */
  acceptedSteps: number;
  /**
   * Holds ended without an accepted checkpoint since its last accepted checkpoint (taken away, lease lapsed,
   * refused, report lapsed: trackRecord.ts).
   */
  strikes: number;
  /** Chain time (s) of the latest strike. */
  lastStrikeAt: bigint;
}

export interface ProgressBounds {
  /** Longest time without step progress (or a report) in beats. */
  stepMs: number;
  /** Longest time without a report (or an acceptance) on chain. */
  reportMs: number;
}

/**
 * The progress rule's constants. Expected step time of a template on a device (expectedStepMs) =
 * MACs per step ÷ REFERENCE_MACS_PER_MS + micro-batches × MICRO_BATCH_MS, where MACs per step =
 * 3 × globalBatch × Σ layers[i]·layers[i+1] (forward and backward) and micro-batches = atomsPerStep ÷ the largest
 * micro-batch the device's memory fits (workloads/trainer.ts). The reference is a slow CPU: 0.1 GMAC/s, 14× below
 * the portable graphs' measured speed on the 2-core development machine (mnist-mlp 145 steps/s ≈ 1.4 GMAC/s).
 * Bounds: stepMs = max(floorMs, STEP_FACTOR × expected), reportMs = max(floorMs, STEP_FACTOR × interval × expected).
 */
export const PROGRESS = {
  REFERENCE_MACS_PER_MS: 100_000,
  MICRO_BATCH_MS: 2,
  STEP_FACTOR: 20,
  FLOOR_MS: 10_000,
};

/** The idle back-off: after n strikes, no work until lastStrikeAt + min(capS, baseS × 2^(n−1)) chain seconds. */
export const BACKOFF_DEFAULTS = { baseS: 60, capS: 3_600 };

/** A track record wins over a new identity asking up to this much less (percent of the new identity's price). */
export const TRACK_RECORD_MARGIN_PCT = 10n;

/**
 * How far past the latest checkpoint (accepted or pending) a beaten step still counts as progress, in intervals:
 * the agent trains ahead of the chain, up to agent/decide.ts MAX_AHEAD (2) finished segments queued plus the one
 * it is training. The report bound, not this, is what stops a holder that only claims steps.
 */
export const AHEAD_INTERVALS = 3;

/** Mirrors JobEscrow.DECISION_TIMEOUT: a pending checkpoint is decidable until reportedAt + this (seconds). */
export const DECISION_TIMEOUT_S = 3_600n;

/** Expected milliseconds per step (see PROGRESS): the template's work and the device's micro-batches. */
export function expectedStepMs(macsPerStep: number, microBatches: number): number {
  return macsPerStep / PROGRESS.REFERENCE_MACS_PER_MS + microBatches * PROGRESS.MICRO_BATCH_MS;
}

/** The progress bounds for one expected step time and checkpoint interval (see PROGRESS). */
export function progressBounds(stepMs: number, interval: number, floorMs = PROGRESS.FLOOR_MS): ProgressBounds {
  return {
    stepMs: Math.max(floorMs, Math.ceil(PROGRESS.STEP_FACTOR * stepMs)),
    reportMs: Math.max(floorMs, Math.ceil(PROGRESS.STEP_FACTOR * interval * stepMs)),
  };
}

export type Action = "assign" | "unassign" | "keep" | "wait";

export interface Decision {
  jobId: bigint;
  epoch: bigint;
  step: number;
  action: Action;
  provider?: string;
  pricePerStep?: bigint;
  reason: string;
}

export type Exclusion =
  | "not registered"
  | "inactive"
  | "awaiting re-stake after a slash"
  | "busy"
  | "fenced"
  | "price above max"
  | "budget short"
  | "memory too small"
  | "stake short"
  | "no recent heartbeat"
  | "stale heartbeat"
  | "arithmetic profile not proven"
  | "unassigned idle from this job"
  | "backing off after idle holds";

export const jobEpochKey = (jobId: bigint | string, epoch: bigint | string) => `${jobId}:${epoch}`;
export const jobBeatKey = (jobId: bigint | string, epoch: bigint | string, provider: string) =>
  `${jobId}:${epoch}:${provider.toLowerCase()}`;

/** Whether a Running job's assignee should be unassigned now. Boundary: still live at exactly `timeoutMs`. */
export function decideRunning(job: CoordinatorJob, view: CoordinatorView): Decision {
  const base = { jobId: job.jobId, epoch: job.epoch, step: job.acceptedStep, provider: job.provider };
  if (job.acceptedStep >= job.totalSteps) {
    return { ...base, action: "keep", reason: "training complete; awaiting verdict" };
  }
  if (view.chainTime > job.leaseExpiresAt) {
    return {
      ...base,
      action: "unassign",
      reason: `on-chain lease lapsed at ${job.leaseExpiresAt} (chain time ${view.chainTime})`,
    };
  }
  if (!view.isCoordinator) {
    return { ...base, action: "keep", reason: "lease live; only the coordinator may unassign before it lapses" };
  }
  if (view.probationPriced && onProbation(job.provider, view)) return decideProbation(job, view);
  const beat = view.lastJobBeat.get(jobBeatKey(job.jobId, job.epoch, job.provider));
  const start = view.watchStart.get(jobEpochKey(job.jobId, job.epoch)) ?? view.nowMs;
  const last = Math.max(beat ?? -Infinity, start);
  const silentMs = view.nowMs - last;
  const limitMs = beat === undefined ? view.timeoutMs + (view.startGraceMs ?? 0) : view.timeoutMs;
  if (!isLive(last, view.nowMs, limitMs)) {
    return {
      ...base,
      action: "unassign",
      reason: `no heartbeat for (job ${job.jobId}, epoch ${job.epoch}) in ${silentMs} ms > ${limitMs} ms`,
    };
  }
  if (beat === undefined) return { ...base, action: "keep", reason: "assigned; waiting for its first heartbeat" };
  const stall = progressStall(job, view, start);
  if (stall) return { ...base, action: "unassign", reason: stall };
  return { ...base, action: "keep", reason: "alive" };
}

/**
 * Whether `provider` has no accepted checkpoint yet, by the chain events the coordinator has read (the contract's
 * `isProven`). Without track records (pure tests) there is no probation rule.
 */
export function onProbation(provider: string, view: CoordinatorView): boolean {
  if (!view.records) return false;
  return (view.records.get(provider.toLowerCase())?.acceptedSteps ?? 0) === 0;
}

/**
 * A holder on probation is taken away only when the contract prices it: its lease lapsed (decided above), or it made
 * no progress on chain for the job's own `progressTimeout` (its template's step bound × the interval), so that
 * `unassign` forfeits its lock to the client. Taking it away sooner for silence or for off-chain bounds would be
 * free for the holder, so every fresh identity could hold each job once at no cost; the coordinator is never
 * trusted with stake, so the contract alone judges "no progress". The price: a newcomer's crash fails over after
 * its lease, not after the heartbeat timeout. Not while a checkpoint is decidable (the verifiers' time), and the
 * timeout then runs from the end of its decision window.
 */
export function decideProbation(job: CoordinatorJob, view: CoordinatorView): Decision {
  const base = { jobId: job.jobId, epoch: job.epoch, step: job.acceptedStep, provider: job.provider };
  const timeout = job.progressTimeout;
  if (!job.lastProgressAt || timeout === undefined || decidable(job, view)) {
    return { ...base, action: "keep", reason: "on probation: taken away at its lease's lapse or its progress timeout" };
  }
  // A checkpoint that lapsed undecided stopped the clock until its window closed (JobEscrow `_stalledAfter`).
  const closed = job.pendingStep !== 0 && job.reportedAt !== undefined ? job.reportedAt + DECISION_TIMEOUT_S : 0n;
  const since = closed > job.lastProgressAt ? closed : job.lastProgressAt;
  const stalledAfter = since + timeout;
  if (view.chainTime > stalledAfter) {
    return {
      ...base,
      action: "unassign",
      reason: `on probation, no progress on chain since ${since} (timeout ${timeout} s, chain time ${view.chainTime}): its lock goes to the client`,
    };
  }
  return {
    ...base,
    action: "keep",
    reason: `on probation: kept until its lease lapses or chain time passes ${stalledAfter} (no progress)`,
  };
}

/**
 * Liveness means progress: why a beating holder has made none for too long, or undefined. Progress is a beat
 * showing a higher step than before for this (job, epoch), up to AHEAD_INTERVALS intervals past the latest
 * checkpoint (a step further ahead than any agent trains proves nothing), or a report or acceptance on chain
 * (`lastProgressAt`, the
 * contract's own progress clock). Unassigned when either bound (progressBounds) is exceeded:
 *   now − max(start, last chain progress, last step progress) > stepMs (+ startGraceMs before any step progress), or
 *   now − max(start, last chain progress) > reportMs + startGraceMs.
 * Not while a checkpoint is decidable: waiting for the verifiers is not the holder's stall (as on chain).
 * Boundary: still kept at exactly the bound.
 */
export function progressStall(job: CoordinatorJob, view: CoordinatorView, startMs: number): string | undefined {
  const holder = providerIndex(view).get(job.provider.toLowerCase());
  const expected = holder && view.expectedStepMs?.(job.templateId, holder.memoryMiB);
  if (expected === undefined || decidable(job, view)) return undefined;
  const bounds = progressBounds(expected, job.checkpointInterval, view.progressFloorMs);
  const grace = view.startGraceMs ?? 0;
  const reportAt = Math.max(startMs, chainProgressMs(job, view));
  const stepAt = stepProgressAt(job, view);
  const sinceStep = view.nowMs - Math.max(reportAt, stepAt ?? -Infinity);
  const stepLimit = bounds.stepMs + (stepAt === undefined ? grace : 0);
  const what = `(job ${job.jobId}, epoch ${job.epoch})`;
  if (sinceStep > stepLimit) return `no step progress for ${what} in ${sinceStep} ms > ${stepLimit} ms`;
  const sinceReport = view.nowMs - reportAt;
  const reportLimit = bounds.reportMs + grace;
  if (sinceReport > reportLimit) return `no report for ${what} in ${sinceReport} ms > ${reportLimit} ms`;
  return undefined;
}

/** When a beat first showed the holder's highest step, if that step is progress it could report. */
function stepProgressAt(job: CoordinatorJob, view: CoordinatorView): number | undefined {
  const seen = view.jobSteps?.get(jobBeatKey(job.jobId, job.epoch, job.provider));
  const ceiling = Math.max(job.acceptedStep, job.pendingStep) + AHEAD_INTERVALS * job.checkpointInterval;
  return seen && seen.step > job.acceptedStep && seen.step <= ceiling ? seen.at : undefined;
}

/** The chain's last progress (assign, report, acceptance) on the coordinator's clock; −∞ when not known. */
function chainProgressMs(job: CoordinatorJob, view: CoordinatorView): number {
  if (!job.lastProgressAt) return -Infinity;
  return view.nowMs - Number(view.chainTime - job.lastProgressAt) * 1_000;
}

/** Whether a reported checkpoint still awaits its decision (JobEscrow `_pendingLive`). */
function decidable(job: CoordinatorJob, view: CoordinatorView): boolean {
  if (job.pendingStep === 0) return false;
  return job.reportedAt === undefined || view.chainTime <= job.reportedAt + DECISION_TIMEOUT_S;
}

/** Providers by lower-case address, built once per view. */
const indexed = new WeakMap<CoordinatorView, Map<string, ProviderView>>();
function providerIndex(view: CoordinatorView): Map<string, ProviderView> {
  let m = indexed.get(view);
  if (!m) indexed.set(view, (m = new Map(view.providers.map((p) => [p.address.toLowerCase(), p]))));
  return m;
}

/**
 * Whether a struck provider still waits out its back-off: n strikes (holds ended without an accepted checkpoint
 * since its last accepted checkpoint) keep it off every job until lastStrikeAt + min(capS, baseS × 2^(n−1))
 * chain seconds. Boundary: eligible again at exactly that time.
 */
export function backingOff(addr: string, view: CoordinatorView): boolean {
  const r = view.records?.get(addr);
  if (!r || r.strikes === 0) return false;
  return view.chainTime < r.lastStrikeAt + BigInt(backoffSeconds(r.strikes, view.backoff));
}

export function backoffSeconds(strikes: number, b = BACKOFF_DEFAULTS): number {
  return Math.min(b.capS, b.baseS * 2 ** Math.min(strikes - 1, 40));
}

/**
 * Why `p` cannot take `job`, or undefined when it can. `busy` holds lower-case addresses. The rules that do not
 * depend on the job come first, so a tick checks them once per provider, not once per (job, provider) pair.
 */
export function exclusionOf(
  job: CoordinatorJob,
  p: ProviderView,
  view: CoordinatorView,
  busy: Set<string>,
): Exclusion | undefined {
  return providerExclusion(p, view, busy) ?? jobExclusion(job, p, view);
}

/** The rules about the provider alone: registered, active, not waiting for a re-stake, not busy, alive, not stale. */
export function providerExclusion(p: ProviderView, view: CoordinatorView, busy: Set<string>): Exclusion | undefined {
  const addr = p.address.toLowerCase();
  if (!p.registered) return "not registered";
  if (!p.active) return "inactive";
  if (view.restake?.has(addr)) return "awaiting re-stake after a slash";
  if (busy.has(addr)) return "busy";
  const beat = view.lastBeat.get(addr);
  if (!beat || !isLive(beat.receivedAt, view.nowMs, view.timeoutMs)) return "no recent heartbeat";
  if (beat.jobId !== "0" && !holds(view, addr, beat)) return "stale heartbeat";
  if (backingOff(addr, view)) return "backing off after idle holds";
  return undefined;
}

/** The rules about this job: not fenced on it, price, budget, memory, arithmetic profile. */
function jobExclusion(job: CoordinatorJob, p: ProviderView, view: CoordinatorView): Exclusion | undefined {
  return ownExclusion(job, p.address.toLowerCase(), view) ?? termsExclusion(job, p, view);
}

/** The rules about this very job (its fences and idle holds), not about its terms. */
function ownExclusion(job: CoordinatorJob, addr: string, view: CoordinatorView): Exclusion | undefined {
  if (view.fenced.get(job.jobId.toString())?.has(addr)) return "fenced";
  if (view.idleOn?.get(job.jobId.toString())?.has(addr)) return "unassigned idle from this job";
  return undefined;
}

/**
 * The rules about the job's terms alone (termsKey): jobs with the same terms exclude the same providers. Price,
 * budget, memory and stake are sdk/rules/jobFit.ts `termsRefusal` (the one rule `job create` and `explain` say too);
 * the arithmetic profile is the coordinator's own.
 */
function termsExclusion(job: CoordinatorJob, p: ProviderView, view: CoordinatorView): Exclusion | undefined {
  const refusal = termsRefusal(termsOf(job, view), p);
  if (refusal) return refusal;
  const beat = view.lastBeat.get(p.address.toLowerCase());
  if (view.profileProven && !view.profileProven(job.templateId, beat?.profile)) return "arithmetic profile not proven";
  return undefined;
}

/**
 * A job's terms as sdk/rules/jobFit.ts reads them. The stake rule's lock ignores a lock the provider still holds on this
 * job: that only ever skips a provider the chain would accept, never offers one it would refuse — so no identity
 * without stake at risk is picked tick after tick while its assign reverts with JobEscrowStakeShort.
 */
function termsOf(job: CoordinatorJob, view: CoordinatorView): JobTerms {
  return {
    ...job,
    memoryNeedMiB: view.memoryNeedMiB(job.templateId),
    minStake: view.minStake ?? 0n,
  };
}

/** Everything termsExclusion (and whyNobodyFits) reads of a job. */
const termsKey = (j: CoordinatorJob) =>
  `${j.templateId}|${j.maxPricePerStep}|${j.totalSteps - j.acceptedStep}|${j.budget - j.paid}|${j.checkpointInterval}`;

/** Whether the provider's latest job beat names a job and epoch it holds on chain. */
function holds(view: CoordinatorView, addr: string, beat: BeatRecord): boolean {
  return heldBy(view).get(addr)?.has(jobEpochKey(beat.jobId, beat.epoch)) ?? false;
}

/** `${jobId}:${epoch}` of the Running jobs each provider holds, built once per view (not once per check). */
const held = new WeakMap<CoordinatorView, Map<string, Set<string>>>();
function heldBy(view: CoordinatorView): Map<string, Set<string>> {
  let m = held.get(view);
  if (!m) {
    m = new Map();
    for (const j of view.jobs) {
      if (j.status !== "Running") continue;
      const addr = j.provider.toLowerCase();
      if (!m.has(addr)) m.set(addr, new Set());
      m.get(addr)!.add(jobEpochKey(j.jobId, j.epoch));
    }
    held.set(view, m);
  }
  return m;
}

/**
 * Cheapest, then most memory, then lowest address: a total order, so two coordinators pick the same one. Price
 * here is rankKey's: a track record (accepted steps) beats a new identity asking up to TRACK_RECORD_MARGIN_PCT
 * less, and wins ties.
 */
export function compareProviders(a: ProviderView, b: ProviderView, records?: Map<string, TrackRecord>): number {
  return compareKeys(sortKey(a, records), sortKey(b, records));
}

interface SortKey {
  rank: bigint;
  known: boolean;
  memoryMiB: number;
  at: bigint;
}

const sortKey = (p: ProviderView, records?: Map<string, TrackRecord>): SortKey => ({
  rank: rankKey(p, records),
  known: hasTrackRecord(p, records),
  memoryMiB: p.memoryMiB,
  at: BigInt(p.address),
});

function compareKeys(x: SortKey, y: SortKey): number {
  if (x.rank !== y.rank) return x.rank < y.rank ? -1 : 1;
  if (x.known !== y.known) return x.known ? -1 : 1;
  if (x.memoryMiB !== y.memoryMiB) return y.memoryMiB - x.memoryMiB;
  return x.at < y.at ? -1 : x.at > y.at ? 1 : 0;
}

/**
 * The price a provider ranks at, ×100: its price ×100 with a track record (accepted steps on chain), its price
 * × (100 + TRACK_RECORD_MARGIN_PCT) without. So a provider that delivered wins over a new identity whenever it
 * asks at most 10 % more; a new identity must undercut it by more than that.
 */
export function rankKey(p: ProviderView, records?: Map<string, TrackRecord>): bigint {
  return p.pricePerStep * (hasTrackRecord(p, records) ? 100n : 100n + TRACK_RECORD_MARGIN_PCT);
}

export function hasTrackRecord(p: ProviderView, records?: Map<string, TrackRecord>): boolean {
  return (records?.get(p.address.toLowerCase())?.acceptedSteps ?? 0) > 0;
}

export interface Ranking {
  ranked: ProviderView[];
  excluded: { address: string; reason: Exclusion }[];
}

/**
 * The eligible providers for `job`, best first. `sorted` (the providers already in compareProviders order) spares
 * a sort per job: the order does not depend on the job, so filtering a sorted list gives the same ranking.
 */
export function rankProviders(
  job: CoordinatorJob,
  view: CoordinatorView,
  busy: Set<string>,
  sorted: ProviderView[] = sortProviders(view.providers, view.records),
): Ranking {
  const ranked: ProviderView[] = [];
  const excluded: Ranking["excluded"] = [];
  for (const p of sorted) {
    const reason = exclusionOf(job, p, view, busy);
    if (reason) excluded.push({ address: p.address, reason });
    else ranked.push(p);
  }
  return { ranked: heldIdleBefore(job, view) ? provenFirst(ranked, view.records) : ranked, excluded };
}

/**
 * Whether some hold of `job` already ended without an accepted checkpoint (TrackRecords.struckOn; idleOn for views
 * built without it): idle, junk-reporting and refused holders alike send it to proven providers first.
 */
export function heldIdleBefore(job: CoordinatorJob, view: CoordinatorView): boolean {
  const id = job.jobId.toString();
  return (view.struckOn?.get(id)?.size ?? 0) > 0 || (view.idleOn?.get(id)?.size ?? 0) > 0;
}

/**
 * A provider the Sybil rule trusts: accepted steps on chain and no strike (a hold ended without an accepted
 * checkpoint) since its latest accepted checkpoint (an accepted checkpoint clears the strikes, TrackRecords).
 */
export function isProven(p: ProviderView, records?: Map<string, TrackRecord>): boolean {
  const r = records?.get(p.address.toLowerCase());
  return r !== undefined && r.acceptedSteps > 0 && r.strikes === 0;
}

/**
 * The Sybil bound: once a job has been held idle, it goes to proven providers first, in their
 * usual order, and only then to the others. So N idle identities delay a job by one idle hold, not N, whenever a
 * proven provider fits; to hold it again an identity must first be proven again, which costs an accepted
 * checkpoint of real work (its strike is cleared only by one). Stable: the usual order within each group.
 */
export function provenFirst(ranked: ProviderView[], records?: Map<string, TrackRecord>): ProviderView[] {
  const proven = ranked.filter((p) => isProven(p, records));
  return proven.length === 0 ? ranked : [...proven, ...ranked.filter((p) => !isProven(p, records))];
}

/** Providers in compareProviders order (keys and addresses computed once, not once per comparison). */
export function sortProviders(providers: ProviderView[], records?: Map<string, TrackRecord>): ProviderView[] {
  const key = new Map(providers.map((p) => [p, sortKey(p, records)]));
  return [...providers].sort((a, b) => compareKeys(key.get(a)!, key.get(b)!));
}

/** Providers assigned to a Running job (lower-case). */
export function busyProviders(jobs: CoordinatorJob[]): Set<string> {
  return new Set(jobs.filter((j) => j.status === "Running").map((j) => j.provider.toLowerCase()));
}

/** Which Open jobs need a provider (steps remain). The tick asks `isFenced` only for these jobs' candidates. */
export function needsProvider(job: CoordinatorJob): boolean {
  return job.status === "Open" && job.acceptedStep < job.totalSteps;
}

/**
 * One tick's decisions: first the Running jobs (unassign or keep), then the Open jobs in job-id order, each
 * taking the best eligible provider that no earlier job of this tick took. The provider-only rules are checked
 * once per tick, the terms rules once per distinct terms (termsKey) and candidate, a job's own fences only for
 * the providers fenced on it; so a tick of J jobs with K distinct terms among C candidates costs ~K × C, not J × C.
 */
export function planCoordinator(view: CoordinatorView): Decision[] {
  const decisions: Decision[] = [];
  const jobs = [...view.jobs].sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  for (const job of jobs) if (job.status === "Running") decisions.push(decideRunning(job, view));
  const tick = assignmentTick(view, busyProviders(jobs));
  for (const job of jobs) if (job.status === "Open") decisions.push(decideOpen(job, view, tick));
  return decisions;
}

/** What one tick's assignments share: the candidates (best first) and what earlier jobs of the tick took. */
interface AssignmentTick {
  /** Providers passing the provider-only rules, in compareProviders order. */
  candidates: ProviderView[];
  byAddress: Map<string, ProviderView>;
  /** Providers excluded by the provider-only rules, per reason, in order of first appearance. */
  general: Map<string, number>;
  /** Why each provider waiting for a re-stake is not assigned (restakeLine), for every wait reason of the tick. */
  restake: string[];
  picked: Set<ProviderView>;
  /** `picked` in the order taken (each terms class folds in the picks it has not seen). */
  picks: ProviderView[];
  classes: Map<string, TermsClass>;
}

/** The candidates' standing on one set of job terms. */
interface TermsClass {
  /** Each candidate's terms exclusion (undefined: eligible on these terms), aligned with `candidates`. */
  reasons: (Exclusion | undefined)[];
  /** The candidates eligible on these terms, best first; all before `next` are picked. */
  eligible: ProviderView[];
  eligibleSet: Set<ProviderView>;
  next: number;
  /** How many of the tick's picks were folded into pickedEligible. */
  folded: number;
  pickedEligible: number;
  /** whyNobodyFits for these terms, once computed. */
  fits?: string[];
  /** The wait reason of a job with no own exclusions, keyed by how many providers were picked when computed. */
  wait?: { picks: number; reason: string };
}

function assignmentTick(view: CoordinatorView, busy: Set<string>): AssignmentTick {
  const general = new Map<string, number>();
  const candidates: ProviderView[] = [];
  const slashed: ProviderView[] = [];
  for (const p of sortProviders(view.providers, view.records)) {
    const reason = providerExclusion(p, view, busy);
    if (reason) general.set(reason, (general.get(reason) ?? 0) + 1);
    else candidates.push(p);
    if (reason === "awaiting re-stake after a slash") slashed.push(p);
  }
  const byAddress = new Map(candidates.map((p) => [p.address.toLowerCase(), p]));
  const restake = restakeLines(slashed, view);
  return { candidates, byAddress, general, restake, picked: new Set(), picks: [], classes: new Map() };
}

/** At most this many providers waiting for a re-stake are named in a wait reason (the rest are counted). */
export const RESTAKE_NAMED = 3;

/** "provider X: slashed at block N (time) on job J, not assigned until it re-stakes", for the first few. */
function restakeLines(slashed: ProviderView[], view: CoordinatorView): string[] {
  const lines = slashed
    .slice(0, RESTAKE_NAMED)
    .map((p) => restakeLine(p.address, view.restake!.get(p.address.toLowerCase())!));
  const more = slashed.length - lines.length;
  if (more > 0) lines.push(`${more} more provider(s) slashed and not assigned until they re-stake`);
  return lines;
}

function termsClass(job: CoordinatorJob, view: CoordinatorView, tick: AssignmentTick): TermsClass {
  const key = termsKey(job);
  let c = tick.classes.get(key);
  if (!c) {
    const reasons = tick.candidates.map((p) => termsExclusion(job, p, view));
    const eligible = tick.candidates.filter((_, i) => reasons[i] === undefined);
    c = { reasons, eligible, eligibleSet: new Set(eligible), next: 0, folded: 0, pickedEligible: 0 };
    tick.classes.set(key, c);
  }
  for (; c.folded < tick.picks.length; c.folded++) if (c.eligibleSet.has(tick.picks[c.folded])) c.pickedEligible++;
  while (c.next < c.eligible.length && tick.picked.has(c.eligible[c.next])) c.next++;
  return c;
}

/** The candidates this job's own rules exclude (fenced, idle holds), unless picked already (then: busy). */
function ownExclusions(job: CoordinatorJob, view: CoordinatorView, tick: AssignmentTick): Map<ProviderView, Exclusion> {
  const own = new Map<ProviderView, Exclusion>();
  const id = job.jobId.toString();
  for (const addrs of [view.fenced.get(id), view.idleOn?.get(id)]) {
    for (const addr of addrs ?? []) {
      const p = tick.byAddress.get(addr);
      if (!p || tick.picked.has(p) || own.has(p)) continue;
      const reason = ownExclusion(job, addr, view);
      if (reason) own.set(p, reason);
    }
  }
  return own;
}

/** One Open job's decision: the best candidate no earlier job took and its own rules allow, or why none. */
function decideOpen(job: CoordinatorJob, view: CoordinatorView, tick: AssignmentTick): Decision {
  const base = { jobId: job.jobId, epoch: job.epoch, step: job.acceptedStep };
  if (!needsProvider(job)) {
    return { ...base, action: "wait", reason: "all steps accepted; awaiting verdict (no assignment needed)" };
  }
  if (!view.isCoordinator) return { ...base, action: "wait", reason: "not the coordinator; only it may assign" };
  const c = termsClass(job, view, tick);
  const own = ownExclusions(job, view, tick);
  const provenOnly = heldIdleBefore(job, view);
  const best =
    (provenOnly ? firstUsable(c, tick, own, (p) => isProven(p, view.records)) : undefined) ??
    firstUsable(c, tick, own, () => true);
  if (!best) return { ...base, action: "wait", reason: waitReason(job, view, tick, c, own) };
  let eligible = c.eligible.length - c.pickedEligible;
  for (const p of own.keys()) if (c.eligibleSet.has(p)) eligible--;
  tick.picked.add(best);
  tick.picks.push(best);
  return {
    ...base,
    action: "assign",
    provider: best.address,
    pricePerStep: best.pricePerStep,
    reason: `${provenOnly && isProven(best, view.records) ? "held idle before: cheapest proven" : "cheapest"} eligible of ${eligible} (${formatPrice(best.pricePerStep)}, ${best.memoryMiB} MiB${record(best, view)})`,
  };
}

/** The best eligible candidate no earlier job took, this job's own rules allow, and `also` accepts. */
function firstUsable(
  c: TermsClass,
  tick: AssignmentTick,
  own: Map<ProviderView, Exclusion>,
  also: (p: ProviderView) => boolean,
): ProviderView | undefined {
  for (let i = c.next; i < c.eligible.length; i++) {
    const p = c.eligible[i];
    if (!tick.picked.has(p) && !own.has(p) && also(p)) return p;
  }
  return undefined;
}

/**
 * Why no candidate can take the job: every provider's reason counted, in order of first appearance (the
 * provider-only reasons first), then each provider waiting for a re-stake after a slash (when and where it was
 * slashed), then why no registered offer fits its terms. Jobs of the same terms and no own exclusions share it
 * until the next pick.
 */
function waitReason(
  job: CoordinatorJob,
  view: CoordinatorView,
  tick: AssignmentTick,
  c: TermsClass,
  own: Map<ProviderView, Exclusion>,
): string {
  if (own.size === 0 && c.wait?.picks === tick.picks.length) return c.wait.reason;
  const counts = new Map(tick.general);
  tick.candidates.forEach((p, i) => {
    const reason = tick.picked.has(p) ? "busy" : (own.get(p) ?? c.reasons[i]);
    if (reason) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  });
  c.fits ??= whyNobodyFits(job, view);
  const why = [...tick.restake, ...c.fits];
  const detail = why.length ? `: ${why.join("; ")}` : "";
  const reason = `no eligible provider${summarize(counts, view.providers.length)}${detail}`;
  if (own.size === 0) c.wait = { picks: tick.picks.length, reason };
  return reason;
}

function record(p: ProviderView, view: CoordinatorView): string {
  const steps = view.records?.get(p.address.toLowerCase())?.acceptedSteps ?? 0;
  return steps > 0 ? `, track record ${steps} accepted steps` : "";
}

/**
 * When no registered offer fits the job's own terms, why (sdk/rules/jobFit.ts, shared with `explain`). The offers carry
 * no slash here: the providers waiting for a re-stake are named once, by the tick (restakeLines).
 */
function whyNobodyFits(job: CoordinatorJob, view: CoordinatorView): string[] {
  const offers = view.providers.filter((p) => p.registered);
  const fit = jobFit(termsOf(job, view), offers);
  // One reason per provider short of stake: the first few named, the rest counted (as restakeLines does).
  const short = fit.reasons.filter((r) => r.kind === "stake short");
  const lines = fit.reasons.filter((r) => r.kind !== "stake short" || short.indexOf(r) < RESTAKE_NAMED);
  const more = short.length - Math.min(short.length, RESTAKE_NAMED);
  const counted = more > 0 ? [`${more} more provider(s) short of free stake for this job's lock`] : [];
  return [...lines.map(describeWait), ...counted];
}

function summarize(counts: Map<string, number>, providers: number): string {
  if (providers === 0) return " (no providers registered)";
  return ` (${[...counts].map(([r, n]) => `${r} ×${n}`).join(", ")})`;
}
