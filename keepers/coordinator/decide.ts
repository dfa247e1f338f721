/**
 * The coordinator's decisions, as pure functions of what it has seen (chain state + heartbeats + clock): which
 * Running job to unassign and which provider gets which Open job. No I/O here; the tick gathers the inputs.
 *
 * Assignment rule (also in keepers/README.md): a provider is eligible for an Open job when it is registered and
 * active, not busy on a Running job (nor picked for another job in this tick), not fenced on this job, asks at
 * most the job's maxPricePerStep, the job's remaining budget covers (totalSteps − acceptedStep) × its price, its
 * device memory is at least the template's need, its free stake covers the lock `assign` takes (price ×
 * interval, at least the registry's minStake), it sent a heartbeat within the timeout, and that latest beat is
 * idle or for a job it still holds. Among the eligible: cheapest price, then most memory, then lowest address.
 */
import { describeWait, jobFit } from "../../sdk/jobFit.ts";
import { isLive } from "../../sdk/heartbeat.ts";
import type { JobView } from "../../sdk/job.ts";

/**
 * The parts of a job (sdk/job.ts) the coordinator decides on. `provider` is the zero address when Open; the lease
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
>;

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
   * Whether verifiers can replay a provider of this arithmetic profile exactly for the template (issue 12's
   * safety net); absent: no profile rule.
   */
  profileProven?: (templateId: string, profile: string | undefined) => boolean;
  /** The registry's network minimum lock per job (`minStake`); with `stakeFree`, the stake rule. */
  minStake?: bigint;
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
  | "busy"
  | "fenced"
  | "price above max"
  | "budget short"
  | "memory too small"
  | "stake short"
  | "no recent heartbeat"
  | "stale heartbeat"
  | "arithmetic profile not proven";

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
  const beat = view.lastJobBeat.get(jobBeatKey(job.jobId, job.epoch, job.provider));
  const start = view.watchStart.get(jobEpochKey(job.jobId, job.epoch)) ?? view.nowMs;
  const last = Math.max(beat ?? -Infinity, start);
  const silentMs = view.nowMs - last;
  const limitMs = beat === undefined ? view.timeoutMs + (view.startGraceMs ?? 0) : view.timeoutMs;
  if (isLive(last, view.nowMs, limitMs)) {
    return {
      ...base,
      action: "keep",
      reason: beat === undefined ? "assigned; waiting for its first heartbeat" : "alive",
    };
  }
  return {
    ...base,
    action: "unassign",
    reason: `no heartbeat for (job ${job.jobId}, epoch ${job.epoch}) in ${silentMs} ms > ${limitMs} ms`,
  };
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

/** The rules about the provider alone: registered, active, not busy, alive, not stale. */
export function providerExclusion(p: ProviderView, view: CoordinatorView, busy: Set<string>): Exclusion | undefined {
  const addr = p.address.toLowerCase();
  if (!p.registered) return "not registered";
  if (!p.active) return "inactive";
  if (busy.has(addr)) return "busy";
  const beat = view.lastBeat.get(addr);
  if (!beat || !isLive(beat.receivedAt, view.nowMs, view.timeoutMs)) return "no recent heartbeat";
  if (beat.jobId !== "0" && !holds(view, addr, beat)) return "stale heartbeat";
  return undefined;
}

/** The rules about this job: not fenced on it, price, budget, memory, arithmetic profile. */
function jobExclusion(job: CoordinatorJob, p: ProviderView, view: CoordinatorView): Exclusion | undefined {
  const addr = p.address.toLowerCase();
  if (view.fenced.get(job.jobId.toString())?.has(addr)) return "fenced";
  if (p.pricePerStep > job.maxPricePerStep) return "price above max";
  const needed = BigInt(job.totalSteps - job.acceptedStep) * p.pricePerStep;
  if (needed > job.budget - job.paid) return "budget short";
  if (p.memoryMiB < view.memoryNeedMiB(job.templateId)) return "memory too small";
  if (p.stakeFree !== undefined && stakeLock(job, p, view) > p.stakeFree) return "stake short";
  const beat = view.lastBeat.get(addr);
  if (view.profileProven && !view.profileProven(job.templateId, beat?.profile)) return "arithmetic profile not proven";
  return undefined;
}

/**
 * The stake `assign` would lock (JobEscrow `_lockFor`, registry `_extraNeeded`): price × interval, at least the
 * network minimum. A lock the provider still holds on this job would lower it; ignoring that only ever skips a
 * provider the chain would accept, never offers one it would refuse — so no identity without stake at risk is
 * picked tick after tick while its assign reverts with JobEscrowStakeShort.
 */
export function stakeLock(
  job: Pick<CoordinatorJob, "checkpointInterval">,
  p: ProviderView,
  view: CoordinatorView,
): bigint {
  const lock = p.pricePerStep * BigInt(job.checkpointInterval);
  const min = view.minStake ?? 0n;
  return lock < min ? min : lock;
}

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

/** Cheapest, then most memory, then lowest address: a total order, so two coordinators pick the same one. */
export function compareProviders(a: ProviderView, b: ProviderView): number {
  if (a.pricePerStep !== b.pricePerStep) return a.pricePerStep < b.pricePerStep ? -1 : 1;
  if (a.memoryMiB !== b.memoryMiB) return b.memoryMiB - a.memoryMiB;
  const x = BigInt(a.address);
  const y = BigInt(b.address);
  return x < y ? -1 : x > y ? 1 : 0;
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
  sorted: ProviderView[] = sortProviders(view.providers),
): Ranking {
  const ranked: ProviderView[] = [];
  const excluded: Ranking["excluded"] = [];
  for (const p of sorted) {
    const reason = exclusionOf(job, p, view, busy);
    if (reason) excluded.push({ address: p.address, reason });
    else ranked.push(p);
  }
  return { ranked, excluded };
}

/** Providers in compareProviders order (addresses parsed once, not once per comparison). */
export function sortProviders(providers: ProviderView[]): ProviderView[] {
  const key = new Map(providers.map((p) => [p, BigInt(p.address)]));
  return [...providers].sort((a, b) => {
    if (a.pricePerStep !== b.pricePerStep) return a.pricePerStep < b.pricePerStep ? -1 : 1;
    if (a.memoryMiB !== b.memoryMiB) return b.memoryMiB - a.memoryMiB;
    const x = key.get(a)!;
    const y = key.get(b)!;
    return x < y ? -1 : x > y ? 1 : 0;
  });
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
 * once per tick; each job then scans only the providers that pass them.
 */
export function planCoordinator(view: CoordinatorView): Decision[] {
  const decisions: Decision[] = [];
  const jobs = [...view.jobs].sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  for (const job of jobs) if (job.status === "Running") decisions.push(decideRunning(job, view));
  const busy = busyProviders(jobs);
  const general = new Map<string, number>();
  const candidates: ProviderView[] = [];
  for (const p of sortProviders(view.providers)) {
    const reason = providerExclusion(p, view, busy);
    if (reason) general.set(reason, (general.get(reason) ?? 0) + 1);
    else candidates.push(p);
  }
  const picked = new Set<ProviderView>();
  for (const job of jobs) {
    if (job.status !== "Open") continue;
    const base = { jobId: job.jobId, epoch: job.epoch, step: job.acceptedStep };
    if (!needsProvider(job)) {
      decisions.push({
        ...base,
        action: "wait",
        reason: "all steps accepted; awaiting verdict (no assignment needed)",
      });
      continue;
    }
    if (!view.isCoordinator) {
      decisions.push({ ...base, action: "wait", reason: "not the coordinator; only it may assign" });
      continue;
    }
    const counts = new Map(general);
    const count = (r: Exclusion) => counts.set(r, (counts.get(r) ?? 0) + 1);
    let best: ProviderView | undefined;
    let eligible = 0;
    for (const p of candidates) {
      const reason = picked.has(p) ? "busy" : jobExclusion(job, p, view);
      if (reason) count(reason);
      else if (eligible++ === 0) best = p;
    }
    if (!best) {
      const reason = `no eligible provider${summarize(counts, view.providers.length)}${whyNobodyFits(job, view)}`;
      decisions.push({ ...base, action: "wait", reason });
      continue;
    }
    picked.add(best);
    decisions.push({
      ...base,
      action: "assign",
      provider: best.address,
      pricePerStep: best.pricePerStep,
      reason: `cheapest eligible of ${eligible} (price ${best.pricePerStep}, ${best.memoryMiB} MiB)`,
    });
  }
  return decisions;
}

/** When no registered offer fits the job's own terms, why (sdk/jobFit.ts, shared with `explain`). */
function whyNobodyFits(job: CoordinatorJob, view: CoordinatorView): string {
  const offers = view.providers.filter((p) => p.registered);
  const fit = jobFit({ ...job, memoryNeedMiB: view.memoryNeedMiB(job.templateId) }, offers);
  return fit.reasons.length ? `: ${fit.reasons.map(describeWait).join("; ")}` : "";
}

function summarize(counts: Map<string, number>, providers: number): string {
  if (providers === 0) return " (no providers registered)";
  return ` (${[...counts].map(([r, n]) => `${r} ×${n}`).join(", ")})`;
}
