/**
 * The escrow's books rebuilt from its events alone: no state reads, no clock, no I/O. Auditors compare the
 * result with the contract (test/protocol/auditor.ts); `gpuchain explain JOB` and `gpuchain wallet ADDRESS`
 * read it to say who is owed what and why.
 *
 * Input: the escrow's decoded logs in any order (ethers' `EventLog`s from `escrow.queryFilter("*")` fit), each
 * `{ eventName, args, blockNumber, index }`, together with the registry's (its stake events; the rest of its
 * events are ignored) so that stakes are counted too. Unknown events (e.g. Ownable's) are ignored; an event for a job
 * whose JobCreated is missing throws, because the books would be wrong (query from the deployment block).
 *
 * Output, `Ledger`:
 *   jobs               Map<jobId, LedgerJob>, one per JobCreated
 *   withdrawable       Map<address, amount>: what each account can withdraw now (the contract's `owed`)
 *   withdrawn          Map<address, amount>: what each account has withdrawn so far
 *   totalLocked        budgets not yet released, providers' unclaimed earnings included
 *   totalBonds         dispute bonds held
 *   totalWithdrawable  sum of `withdrawable`
 *   stakes             Map<provider, { deposited, locked, unbonding, slashed }>: the registry's stake books
 *   totalStaked        Σ deposits still in the registry (locked and unbonding included)
 *   owes               totalLocked + totalBonds + totalWithdrawable + totalStaked (proof of reserves, right side)
 *   held               tokens in (budgets, bonds, stakes) minus tokens out (withdrawals), as the events tell; a
 *                      plain token transfer is not an event, so `reserves().held` may exceed it
 *   roles              { coordinator, arbiter, feeRecipient }, from the latest *Set events
 *   templates          Map<templateId, approved>
 *   stepBounds         Map<templateId, ms a step> (set by the owner; absent: MAX_SECONDS_PER_STEP)
 * `LedgerJob` mirrors the contract's `Job` (stored phase, epoch, provider, price, accepted/pending step and hash,
 * paid) plus what only history tells: per-provider earnings not yet claimed and already released, fenced
 * providers, slashes, the verdict, the dispute, the settlement, and `history` (every event of the job, in order).
 * `statusAt(job, now)` derives the clock-dependent statuses exactly as the contract's `statusOf`.
 */
import { getAddress } from "ethers";
import { JobStatus as JOB_STATUS_VALUES, statusName, type JobStatusValue } from "./job.ts";
import { statusAtDeadline } from "./settleTiming.ts";
import { applyStakeEvent, emptyStakeBook, isStakeEvent, type StakeBook, type StakeEventName } from "./stake.ts";

/** UnassignReason, numbered as in IJobEscrow (mirrored once, in sdk/rules/job.ts). */
export { UnassignReason } from "./job.ts";

/** JobStatus, numbered as in IJobEscrow (mirrored once, in sdk/rules/job.ts). */
export const JobStatus = JOB_STATUS_VALUES;
export type JobStatus = JobStatusValue;

export interface EscrowEvent {
  eventName: string;
  args: unknown;
  blockNumber: number;
  index: number;
}

export interface LedgerEntry {
  event: string;
  blockNumber: number;
  logIndex: number;
  args: Record<string, unknown>;
}

export interface LedgerJob {
  jobId: bigint;
  client: string;
  templateId: string;
  seed: string;
  totalSteps: number;
  checkpointInterval: number;
  maxPricePerStep: bigint;
  budget: bigint;
  disputeWindow: bigint;
  phase: JobStatus;
  epoch: bigint;
  provider: string | null;
  pricePerStep: bigint;
  acceptedStep: number;
  acceptedHash: string | null;
  pendingStep: number;
  pendingHash: string | null;
  /** Who reported the pending checkpoint, at which epoch: it, not the current holder, is credited for it. */
  pendingProvider: string | null;
  pendingEpoch: bigint;
  paid: bigint;
  earnings: Map<string, bigint>;
  released: Map<string, bigint>;
  fenced: Set<string>;
  slashes: {
    provider: string;
    faultStep: number;
    finder: string;
    slashed: bigint;
    earningsVoided: bigint;
    /** The client's share of the slashed stake (its compensation). */
    toClient: bigint;
  }[];
  /** Locks of providers on probation whose hold ended without an accepted checkpoint, paid to the client. */
  forfeits: { provider: string; amount: bigint; how: number }[];
  expired: boolean;
  verdict: { modelHash: string; metric: bigint; passed: boolean; disputeDeadline: bigint } | null;
  dispute: { bond: bigint; arbiterDeadline: bigint; resolved: boolean; upheld: boolean; timedOut: boolean } | null;
  settlement: { refund: bigint; providersPaid: bigint; bondReturned: bigint; bondForfeited: bigint } | null;
  history: LedgerEntry[];
}

export interface Ledger {
  jobs: Map<bigint, LedgerJob>;
  withdrawable: Map<string, bigint>;
  withdrawn: Map<string, bigint>;
  totalLocked: bigint;
  totalBonds: bigint;
  totalWithdrawable: bigint;
  stakes: Map<string, StakeBook>;
  totalStaked: bigint;
  owes: bigint;
  held: bigint;
  roles: { coordinator: string | null; arbiter: string | null; feeRecipient: string | null };
  templates: Map<string, boolean>;
  /** Each template's step bound as its owner set it (ms); a job's progress timeout is its interval × this. */
  stepBounds: Map<string, number>;
}

/** Folds the escrow's events into its books. Pure: the same events give the same ledger. */
export function foldEscrowEvents(events: readonly EscrowEvent[]): Ledger {
  const ledger = emptyLedger();
  appendEscrowEvents(ledger, [...events].sort(chainOrder));
  return ledger;
}

/** The books before any event. */
export function emptyLedger(): Ledger {
  return {
    jobs: new Map(),
    withdrawable: new Map(),
    withdrawn: new Map(),
    totalLocked: 0n,
    totalBonds: 0n,
    totalWithdrawable: 0n,
    stakes: new Map(),
    totalStaked: 0n,
    owes: 0n,
    held: 0n,
    roles: { coordinator: null, arbiter: null, feeRecipient: null },
    templates: new Map(),
    stepBounds: new Map(),
  };
}

/** Chain order: by block, then log index. */
export function chainOrder(a: EscrowEvent, b: EscrowEvent): number {
  return a.blockNumber - b.blockNumber || a.index - b.index;
}

/**
 * Folds more events into `ledger` in place (an incremental fold). `ordered` must be in chain order and come after
 * every event folded so far: then folding e1..ek and then ek+1..en gives the ledger of folding e1..en. An event out
 * of order (a reorg, a restarted chain) needs a fold from scratch: the caller checks with `chainOrder`.
 */
export function appendEscrowEvents(ledger: Ledger, ordered: readonly EscrowEvent[]): void {
  for (const e of ordered) apply(ledger, e);
  ledger.owes = ledger.totalLocked + ledger.totalBonds + ledger.totalWithdrawable + ledger.totalStaked;
}

/** The job's status at `now` (seconds): the stored phase turned by its deadline (sdk/rules/settleTiming.ts, `statusOf`). */
export function statusAt(job: LedgerJob, now: bigint): JobStatus {
  return JobStatus[statusAtDeadline(statusName(job.phase), deadlineOf(job), now)];
}

/** The deadline that turns the job's stored phase (0: none): the dispute window's, or the arbiter's. */
export function deadlineOf(job: Pick<LedgerJob, "phase" | "verdict" | "dispute">): bigint {
  if (job.phase === JobStatus.DisputeWindow) return job.verdict?.disputeDeadline ?? 0n;
  if (job.phase === JobStatus.Disputed) return job.dispute?.arbiterDeadline ?? 0n;
  return 0n;
}

/** An account's stake books in the registry (zeros when it never staked). */
export function stakeBookOf(ledger: Ledger, account: string): Omit<StakeBook, "locks"> {
  const st = ledger.stakes.get(getAddress(account)) ?? emptyStakeBook();
  return {
    deposited: st.deposited,
    locked: st.locked,
    unbonding: st.unbonding,
    paidIn: st.paidIn,
    slashed: st.slashed,
    forfeited: st.forfeited,
  };
}

/**
 * What the job's client received for what went wrong: its share of every slash on the job plus every lock a
 * provider on probation forfeited to it. The one sum the CLI, `npm start` and the dashboard show.
 */
export function clientCompensation(job: Pick<LedgerJob, "slashes" | "forfeits">): bigint {
  const slashed = job.slashes.reduce((t, s) => t + s.toClient, 0n);
  return job.forfeits.reduce((t, f) => t + f.amount, slashed);
}

/**
 * What a provider earned on a job: its accepted checkpoints' pay less the earnings a slash voided, 0 when an upheld
 * dispute voided the job's payments, released to its balance or not. The one home of "earned": `explain`, `wallet`,
 * `npm start`'s table (sdk/words/narrative.ts providerSummaries) and the dashboard's providers table read it.
 */
export function earnedOn(job: Pick<LedgerJob, "earnings" | "released">, provider: string): bigint {
  const who = getAddress(provider);
  return (job.earnings.get(who) ?? 0n) + (job.released.get(who) ?? 0n);
}

/** What a provider earned over every job of the books (earnedOn summed). */
export function earnedTotal(ledger: Pick<Ledger, "jobs">, provider: string): bigint {
  let total = 0n;
  for (const job of ledger.jobs.values()) total += earnedOn(job, provider);
  return total;
}

/** What an account is owed now, and what it may still claim per settled or cancelled job. */
export function walletOf(ledger: Ledger, account: string) {
  const who = getAddress(account);
  const claimable: { jobId: bigint; amount: bigint }[] = [];
  const pending: { jobId: bigint; amount: bigint }[] = [];
  for (const job of ledger.jobs.values()) {
    const amount = job.earnings.get(who) ?? 0n;
    if (amount === 0n) continue;
    const final = job.phase === JobStatus.Settled || job.phase === JobStatus.Cancelled;
    (final ? claimable : pending).push({ jobId: job.jobId, amount });
  }
  return {
    withdrawable: ledger.withdrawable.get(who) ?? 0n,
    withdrawn: ledger.withdrawn.get(who) ?? 0n,
    claimable,
    pending,
  };
}

// ------------------------------------------------------------------ folding

function apply(l: Ledger, e: EscrowEvent): void {
  const a = plainArgs(e.args);
  if (isStakeEvent(e.eventName)) return foldStake(l, e.eventName, a);
  // Unknown events (e.g. OwnershipTransferred) are not part of the books.
  if (Object.hasOwn(HANDLERS, e.eventName)) HANDLERS[e.eventName](l, e, argsOf(l, e, a));
}

/** Typed readers of one event's arguments, and its job (recorded in the job's history when read). */
interface Args {
  a: Record<string, unknown>;
  big: (k: string) => bigint;
  num: (k: string) => number;
  addr: (k: string) => string;
  str: (k: string) => string;
  job: () => LedgerJob;
}

function argsOf(l: Ledger, e: EscrowEvent, a: Record<string, unknown>): Args {
  const big = (k: string) => BigInt(a[k] as bigint | number);
  return {
    a,
    big,
    num: (k) => Number(a[k] as bigint | number),
    addr: (k) => getAddress(a[k] as string),
    str: (k) => a[k] as string,
    job: () => jobOf(l, big("jobId"), e, a),
  };
}

/** One handler per escrow event kind: what it changes in the books. */
const HANDLERS: Record<string, (l: Ledger, e: EscrowEvent, x: Args) => void> = {
  JobCreated: (l, e, { a, big, addr }) => {
    const j = newJob(big("jobId"), addr("client"), a);
    l.jobs.set(j.jobId, j);
    record(j, e, a);
    l.totalLocked += j.budget;
    l.held += j.budget;
  },
  ProviderAssigned: (_l, _e, { big, addr, job }) => {
    const j = job();
    j.phase = JobStatus.Running;
    j.provider = addr("provider");
    j.epoch = big("epoch");
    j.pricePerStep = big("pricePerStep");
  },
  ProviderUnassigned: (_l, _e, { big, job }) => {
    // A pending checkpoint stays its reporter's (decided later on its own epoch, or lapsed).
    const j = job();
    j.phase = JobStatus.Open;
    j.epoch = big("newEpoch");
    j.provider = null;
    j.pricePerStep = 0n;
  },
  LeaseExtended: (_l, _e, { job }) => {
    job();
  },
  CheckpointReported: (_l, _e, { big, num, addr, str, job }) => {
    const j = job();
    j.pendingStep = num("step");
    j.pendingHash = str("checkpointHash");
    j.pendingProvider = addr("provider");
    j.pendingEpoch = big("epoch");
  },
  CheckpointLapsed: (_l, _e, { job }) => {
    clearPending(job());
  },
  CheckpointAccepted: (_l, _e, { big, num, addr, str, job }) => {
    const j = job();
    const provider = addr("provider");
    const amount = big("amount");
    j.paid += amount;
    j.earnings.set(provider, (j.earnings.get(provider) ?? 0n) + amount);
    j.acceptedStep = num("step");
    j.acceptedHash = str("checkpointHash");
    clearPending(j);
  },
  CheckpointRefused: (_l, _e, { addr, job }) => {
    const j = job();
    j.fenced.add(addr("provider"));
    clearPending(j);
  },
  ProviderSlashed: (l, e, { big, num, addr, job }) => {
    const j = job();
    const provider = addr("provider");
    const voided = big("earningsVoided");
    j.paid -= voided;
    j.earnings.set(provider, (j.earnings.get(provider) ?? 0n) - voided);
    j.slashes.push({
      provider,
      faultStep: num("faultStep"),
      finder: addr("finder"),
      slashed: big("slashed"),
      earningsVoided: voided,
      toClient: big("toClient"),
    });
    credit(l, j.client, big("toClient"));
    credit(l, addr("finder"), big("toFinder"));
    credit(l, feeRecipientOf(l, e), big("toFeeRecipient"));
  },
  HoldForfeited: (l, _e, { big, num, addr, job }) => {
    const j = job();
    const amount = big("amount");
    j.forfeits.push({ provider: addr("provider"), amount, how: num("how") });
    credit(l, j.client, amount);
  },
  ProbationEnded: (_l, _e, { job }) => {
    job();
  },
  JobExpired: (_l, _e, { job }) => {
    job().expired = true; // JobCancelled follows in the same transaction with the refund
  },
  VerdictSubmitted: (_l, _e, { a, big, str, job }) => {
    const j = job();
    j.phase = JobStatus.DisputeWindow;
    j.epoch = big("newEpoch"); // the bump that fences the last assignee
    j.verdict = {
      modelHash: str("modelHash"),
      metric: big("metric"),
      passed: a.passed as boolean,
      disputeDeadline: big("disputeDeadline"),
    };
  },
  DisputeOpened: (l, _e, { big, job }) => {
    const j = job();
    const bond = big("bond");
    j.phase = JobStatus.Disputed;
    j.dispute = { bond, arbiterDeadline: big("arbiterDeadline"), resolved: false, upheld: false, timedOut: false };
    l.totalBonds += bond;
    l.held += bond;
  },
  DisputeResolved: (_l, e, { a, job }) => {
    const j = job();
    const d = disputeOf(j, e);
    d.resolved = true;
    d.upheld = a.upheld as boolean;
    if (d.upheld) {
      // The client was right: the job's provider payments are void, never claimable.
      j.paid = 0n;
      j.earnings.clear();
    }
  },
  ArbiterTimedOut: (_l, e, { job }) => {
    const d = disputeOf(job(), e);
    d.resolved = true;
    d.timedOut = true;
  },
  JobSettled: (l, e, { big, job }) => {
    const j = job();
    const refund = big("refund");
    const bondReturned = big("bondReturned");
    const bondForfeited = big("bondForfeited");
    j.phase = JobStatus.Settled;
    j.settlement = { refund, providersPaid: big("providersPaid"), bondReturned, bondForfeited };
    l.totalLocked -= refund;
    l.totalBonds -= bondReturned + bondForfeited;
    credit(l, j.client, refund + bondReturned);
    if (bondForfeited > 0n) credit(l, feeRecipientOf(l, e), bondForfeited);
  },
  JobCancelled: (l, _e, { big, job }) => {
    const j = job();
    const refund = big("refund");
    j.phase = JobStatus.Cancelled;
    j.settlement = { refund, providersPaid: j.paid, bondReturned: 0n, bondForfeited: 0n };
    l.totalLocked -= refund;
    credit(l, j.client, refund);
  },
  EarningsReleased: (l, _e, { big, addr, job }) => {
    const j = job();
    const provider = addr("provider");
    const amount = big("amount");
    j.earnings.set(provider, (j.earnings.get(provider) ?? 0n) - amount);
    j.released.set(provider, (j.released.get(provider) ?? 0n) + amount);
    l.totalLocked -= amount;
    credit(l, provider, amount);
  },
  Withdrawn: (l, _e, { big, addr }) => {
    const account = addr("account");
    const amount = big("amount");
    l.withdrawable.set(account, (l.withdrawable.get(account) ?? 0n) - amount);
    l.withdrawn.set(account, (l.withdrawn.get(account) ?? 0n) + amount);
    l.totalWithdrawable -= amount;
    l.held -= amount;
  },
  TemplateApprovalSet: (l, _e, { a, str }) => {
    l.templates.set(str("templateId"), a.approved as boolean);
  },
  TemplateStepBoundSet: (l, _e, { a, str }) => {
    l.stepBounds.set(str("templateId"), Number(a.stepMillis));
  },
  CoordinatorSet: (l, _e, { addr }) => {
    l.roles.coordinator = addr("coordinator");
  },
  ArbiterSet: (l, _e, { addr }) => {
    l.roles.arbiter = addr("arbiter");
  },
  FeeRecipientSet: (l, _e, { addr }) => {
    l.roles.feeRecipient = addr("feeRecipient");
  },
};

/** A registry stake event: the provider's books (sdk/rules/stake.ts's one fold) and the registry's totals. */
function foldStake(l: Ledger, name: StakeEventName, a: Record<string, unknown>): void {
  const opt = (k: string) => (a[k] === undefined ? undefined : BigInt(a[k] as bigint));
  const moved = applyStakeEvent(stakeOf(l, getAddress(a.provider as string)), {
    name,
    jobId: opt("jobId"),
    amount: opt("amount"),
    deposited: opt("deposited"),
    unbonding: opt("unbonding"),
  });
  l.totalStaked += moved;
  // A slash or a forfeit moves the tokens from the registry to the escrow (held stays); ProviderSlashed credits
  // the split, HoldForfeited the client.
  if (name !== "StakeSlashed" && name !== "StakeForfeited") l.held += moved;
}

function clearPending(j: LedgerJob): void {
  j.pendingStep = 0;
  j.pendingHash = null;
  j.pendingProvider = null;
  j.pendingEpoch = 0n;
}

function stakeOf(l: Ledger, provider: string): StakeBook {
  let st = l.stakes.get(provider);
  if (st === undefined) {
    st = emptyStakeBook();
    l.stakes.set(provider, st);
  }
  return st;
}

function newJob(jobId: bigint, client: string, a: Record<string, unknown>): LedgerJob {
  return {
    jobId,
    client,
    templateId: a.templateId as string,
    seed: a.seed as string,
    totalSteps: Number(a.totalSteps),
    checkpointInterval: Number(a.checkpointInterval),
    maxPricePerStep: BigInt(a.maxPricePerStep as bigint),
    budget: BigInt(a.budget as bigint),
    disputeWindow: BigInt(a.disputeWindow as bigint),
    phase: JobStatus.Open,
    epoch: 0n,
    provider: null,
    pricePerStep: 0n,
    acceptedStep: 0,
    acceptedHash: null,
    pendingStep: 0,
    pendingHash: null,
    pendingProvider: null,
    pendingEpoch: 0n,
    paid: 0n,
    earnings: new Map(),
    released: new Map(),
    fenced: new Set(),
    slashes: [],
    forfeits: [],
    expired: false,
    verdict: null,
    dispute: null,
    settlement: null,
    history: [],
  };
}

function jobOf(l: Ledger, jobId: bigint, e: EscrowEvent, a: Record<string, unknown>): LedgerJob {
  const j = l.jobs.get(jobId);
  if (j === undefined)
    throw new Error(`ledger: ${e.eventName} for job ${jobId} before its JobCreated (block ${e.blockNumber})`);
  record(j, e, a);
  return j;
}

function disputeOf(j: LedgerJob, e: EscrowEvent) {
  if (j.dispute === null) throw new Error(`ledger: ${e.eventName} for job ${j.jobId} without DisputeOpened`);
  return j.dispute;
}

function feeRecipientOf(l: Ledger, e: EscrowEvent): string {
  if (l.roles.feeRecipient === null)
    throw new Error(`ledger: bond forfeited before any FeeRecipientSet (block ${e.blockNumber})`);
  return l.roles.feeRecipient;
}

function credit(l: Ledger, account: string, amount: bigint): void {
  if (amount === 0n) return;
  l.withdrawable.set(account, (l.withdrawable.get(account) ?? 0n) + amount);
  l.totalWithdrawable += amount;
}

function record(j: LedgerJob, e: EscrowEvent, args: Record<string, unknown>): void {
  j.history.push({ event: e.eventName, blockNumber: e.blockNumber, logIndex: e.index, args });
}

/** Named arguments as a plain object, whether given one or an ethers `Result` (an array with names). */
function plainArgs(args: unknown): Record<string, unknown> {
  const maybeResult = args as { toObject?: () => Record<string, unknown> };
  return typeof maybeResult.toObject === "function" ? maybeResult.toObject() : (args as Record<string, unknown>);
}
