/**
 * The one off-chain model of a job: IJobEscrow.JobStatus mirrored once (test/helpers/jobModel.ts checks it against
 * the compiled ABI), named predicates over it, and the one reader of a job's on-chain state (`readJob`) that the
 * keepers, the agent and the verifier use. Pure except `readJob`, which only calls the two escrow views it is given,
 * and `readJobsBatched`, the same two views for many jobs through Multicall3.
 */
import { getAddress, type Interface } from "ethers";
import type { BatchReader, RawResult } from "./multicall.ts";

/** IJobEscrow.JobStatus, numbered as on chain. `statusOf` derives Settleable and ArbiterTimedOut from the clock. */
export const JobStatus = {
  None: 0,
  Open: 1,
  Running: 2,
  DisputeWindow: 3,
  Settleable: 4,
  Disputed: 5,
  ArbiterTimedOut: 6,
  Settled: 7,
  Cancelled: 8,
} as const;
export type JobStatusName = keyof typeof JobStatus;
export type JobStatusValue = (typeof JobStatus)[JobStatusName];

/** Status names by enum value. */
export const JOB_STATUS = Object.keys(JobStatus) as JobStatusName[];

/** The name of an on-chain status value; throws on a value the enum does not have (a newer contract). */
export function statusName(value: bigint | number): JobStatusName {
  const name = JOB_STATUS[Number(value)];
  if (name === undefined) throw new RangeError(`unknown JobStatus ${value} (the escrow is newer than this code)`);
  return name;
}

/** IJobEscrow.UnassignReason, numbered as on chain. */
export const UnassignReason = { Coordinator: 0, LeaseLapsed: 1, Refused: 2 } as const;

/**
 * Each unassign reason as people read it, the one table: `lost` names it in `gpuchain explain --json`, `short` on
 * the dashboard's timeline ("failover: alice taken away by the coordinator"), `why` inside a sentence.
 */
const UNASSIGN_REASONS = [
  // The chain records only that the coordinator did it; its reason (no heartbeat, or no progress within its
  // bounds) is the coordinator's to tell (GET /unassignments), so the sentence does not guess which.
  {
    lost: "heartbeats",
    short: "taken away by the coordinator",
    why: "the coordinator took the job away (no heartbeat or no progress within its bounds)",
  },
  { lost: "lease", short: "lease lapsed", why: "its on-chain lease lapsed" },
  { lost: "refused", short: "refused", why: "its checkpoint was refused by the Quality Guard" },
] as const;
export type UnassignReasonText = (typeof UNASSIGN_REASONS)[number];

/** The reason's texts; one this code does not know reads as the coordinator's, with an honest `why`. */
export function unassignReason(
  reason: unknown,
): UnassignReasonText | (Omit<UnassignReasonText, "why"> & { why: string }) {
  return (
    UNASSIGN_REASONS[Number(reason)] ?? {
      ...UNASSIGN_REASONS[0],
      why: `reason ${String(reason)}, unknown to this code`,
    }
  );
}

/** IJobEscrow.HoldEnd, numbered as on chain: how a hold ended without an accepted checkpoint. */
export const HoldEnd = { Unassigned: 0, LeaseLapsed: 1, Refused: 2 } as const;

/** How a forfeited hold ended, inside a sentence ("forfeited its 1.000000 USDC lock: …"). */
const HOLD_ENDS = [
  "no progress for the job's progress timeout, then the coordinator took the job away",
  "its lease lapsed before an accepted checkpoint",
  "its checkpoint was refused",
] as const;

/** The sentence part for a HoldEnd value; one this code does not know says so. */
export function holdEndText(how: unknown): string {
  return HOLD_ENDS[Number(how)] ?? `hold end ${String(how)}, unknown to this code`;
}

// ---------------------------------------------------------------- predicates (one meaning each, repo-wide)

/** Waiting for a provider. */
export const isOpen = (s: JobStatusName): boolean => s === "Open";
/** A provider holds the current epoch. */
export const isRunning = (s: JobStatusName): boolean => s === "Running";
/** Open or Running: steps may still be trained, reported and accepted, or the verdict submitted. */
export const isTraining = (s: JobStatusName): boolean => s === "Open" || s === "Running";
/** Past training (verdict submitted, or cancelled): no provider, coordinator or verifier ever acts on it again. */
export const isTrainingOver = (s: JobStatusName): boolean => s !== "None" && !isTraining(s);
/** Anyone may `settle` it now (the dispute window passed, or the arbiter stayed silent past the deadline). */
export const isSettleable = (s: JobStatusName): boolean => s === "Settleable" || s === "ArbiterTimedOut";
/** Final: the status never changes again (Settled or Cancelled). */
export const isFinished = (s: JobStatusName): boolean => s === "Settled" || s === "Cancelled";

// ---------------------------------------------------------------- the job as read from the chain

/** What `jobOf` returns (an ethers Result or a plain object with the same fields). */
export interface RawJob {
  client: string;
  epoch: bigint | number;
  templateId: string;
  seed: string;
  totalSteps: bigint | number;
  checkpointInterval: bigint | number;
  acceptedStep: bigint | number;
  pendingStep: bigint | number;
  leaseExpiresAt: bigint | number;
  disputeWindow: bigint | number;
  provider: string;
  lastProgressAt: bigint | number;
  pricePerStep: bigint | number;
  maxPricePerStep: bigint | number;
  budget: bigint | number;
  paid: bigint | number;
  acceptedHash: string;
  pendingHash: string;
  /** Who reported the pending checkpoint and at which epoch (it stays decidable after its reporter leaves). */
  pendingProvider?: string;
  pendingEpoch?: bigint | number;
  reportedAt?: bigint | number;
  progressTimeout?: bigint | number;
}

/** A job's on-chain state at one block, as plain values: hashes and ids lower-case, steps as numbers. */
export interface JobView {
  jobId: bigint;
  /** `statusOf` (the derived status), not the stored phase. */
  status: JobStatusName;
  client: string;
  provider: string;
  epoch: bigint;
  templateId: string;
  seed: string;
  totalSteps: number;
  checkpointInterval: number;
  acceptedStep: number;
  acceptedHash: string;
  pendingStep: number;
  pendingHash: string;
  /** The pending checkpoint's reporter and epoch: decisions name this epoch, acceptance credits this reporter. */
  pendingProvider: string;
  pendingEpoch: bigint;
  /** The pending checkpoint may be decided until reportedAt + DECISION_TIMEOUT. */
  reportedAt: bigint;
  /** This job's bound on an assignee's time without progress. */
  progressTimeout: bigint;
  leaseExpiresAt: bigint;
  disputeWindow: bigint;
  lastProgressAt: bigint;
  pricePerStep: bigint;
  maxPricePerStep: bigint;
  budget: bigint;
  paid: bigint;
}

export function toJobView(jobId: bigint, status: bigint | number, raw: RawJob): JobView {
  return {
    jobId,
    status: statusName(status),
    client: raw.client,
    provider: raw.provider,
    epoch: BigInt(raw.epoch),
    templateId: raw.templateId.toLowerCase(),
    seed: raw.seed.toLowerCase(),
    totalSteps: Number(raw.totalSteps),
    checkpointInterval: Number(raw.checkpointInterval),
    acceptedStep: Number(raw.acceptedStep),
    acceptedHash: raw.acceptedHash.toLowerCase(),
    pendingStep: Number(raw.pendingStep),
    pendingHash: raw.pendingHash.toLowerCase(),
    // Older fixtures omit them: a pending checkpoint then belongs to the current epoch and holder.
    pendingProvider: raw.pendingProvider ?? raw.provider,
    pendingEpoch: BigInt(raw.pendingEpoch ?? raw.epoch),
    reportedAt: BigInt(raw.reportedAt ?? 0),
    progressTimeout: BigInt(raw.progressTimeout ?? 0),
    leaseExpiresAt: BigInt(raw.leaseExpiresAt),
    disputeWindow: BigInt(raw.disputeWindow),
    lastProgressAt: BigInt(raw.lastProgressAt),
    pricePerStep: BigInt(raw.pricePerStep),
    maxPricePerStep: BigInt(raw.maxPricePerStep),
    budget: BigInt(raw.budget),
    paid: BigInt(raw.paid),
  };
}

/** Every step accepted: only the verdict is left (or already given). */
export const allStepsAccepted = (j: Pick<JobView, "acceptedStep" | "totalSteps">): boolean =>
  j.totalSteps > 0 && j.acceptedStep >= j.totalSteps;

/** The two escrow views a job is read from (a connected JobEscrow satisfies it). */
export interface JobReader {
  statusOf(...args: [bigint] | [bigint, { blockTag: number }]): Promise<bigint>;
  jobOf(...args: [bigint] | [bigint, { blockTag: number }]): Promise<RawJob>;
}

/** Reads one job, both views at the same block when `blockTag` is given (so status and fields agree). */
export async function readJob(escrow: JobReader, jobId: bigint, blockTag?: number): Promise<JobView> {
  const [status, raw] =
    blockTag === undefined
      ? await Promise.all([escrow.statusOf(jobId), escrow.jobOf(jobId)])
      : await Promise.all([escrow.statusOf(jobId, { blockTag }), escrow.jobOf(jobId, { blockTag })]);
  return toJobView(jobId, status, raw);
}

/** The job ids 1..jobCount that `skip` does not rule out (e.g. jobs already known to be past training). */
export function jobIds(jobCount: bigint, skip: (jobId: bigint) => boolean = () => false): bigint[] {
  const ids: bigint[] = [];
  for (let id = 1n; id <= jobCount; id++) if (!skip(id)) ids.push(id);
  return ids;
}

// ---------------------------------------------------------------- many jobs in one request

/** What `readJobsBatched` needs: a Multicall3 reader (sdk/multicall.ts) and the escrow's address and ABI. */
export interface BatchedJobSource {
  reader: BatchReader;
  escrow: string;
  iface: Interface;
}

/**
 * `statusOf` + `jobOf` of every id at `blockTag` through Multicall3 (2 reads per job, 200 reads per eth_call), the
 * answers sliced by word (`staticDecoder`) rather than through the generic ABI coder: 1,000 jobs decode in
 * milliseconds, not seconds.
 */
export async function readJobsBatched(src: BatchedJobSource, ids: bigint[], blockTag: number): Promise<JobView[]> {
  const statusOf = src.iface.getFunction("statusOf")!.selector;
  const jobOf = src.iface.getFunction("jobOf")!.selector;
  const decodeJob = staticDecoder(src.iface, "jobOf");
  const calls = ids.flatMap((id) => {
    const arg = id.toString(16).padStart(64, "0");
    return [
      { target: src.escrow, data: statusOf + arg },
      { target: src.escrow, data: jobOf + arg },
    ];
  });
  const results = await src.reader.readRaw(calls, blockTag);
  return ids.map((id, i) => {
    const status = wordsOf(answer(results[2 * i], "statusOf", id), 1)[0];
    const raw = decodeJob(answer(results[2 * i + 1], "jobOf", id)) as unknown as RawJob;
    return toJobView(id, BigInt("0x" + status), raw);
  });
}

/**
 * `jobOf` alone for every id (1 read per job): `status` is the stored phase, which equals `statusOf` for every
 * status but the two the clock derives (a DisputeWindow past its end reads DisputeWindow, not Settleable; Disputed
 * past the arbiter's deadline reads Disputed). For a reader that only tells training from not (the coordinator)
 * that is exact, at half the reads.
 */
export async function readStoredJobsBatched(
  src: BatchedJobSource,
  ids: bigint[],
  blockTag: number,
): Promise<JobView[]> {
  const jobOf = src.iface.getFunction("jobOf")!.selector;
  const decodeJob = staticDecoder(src.iface, "jobOf");
  const calls = ids.map((id) => ({ target: src.escrow, data: jobOf + id.toString(16).padStart(64, "0") }));
  const results = await src.reader.readRaw(calls, blockTag);
  return ids.map((id, i) => {
    const raw = decodeJob(answer(results[i], "jobOf", id));
    return toJobView(id, raw.phase as bigint, raw as unknown as RawJob);
  });
}

function answer(r: RawResult, fn: string, id: bigint): string {
  if (r.error) throw r.error;
  if (!r.success) throw new Error(`${fn}(${id}) reverted (${r.data})`);
  return r.data;
}

// ---------------------------------------------------------------- static results, word by word

type StaticValue = bigint | boolean | string;

/** The return data's first `n` words (hex, without 0x); throws when it is shorter. */
function wordsOf(data: string, n: number): string[] {
  if (data.length < 2 + 64 * n) throw new RangeError(`return data has ${(data.length - 2) / 64} words, expected ${n}`);
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = data.slice(2 + 64 * i, 66 + 64 * i);
  return out;
}

const STATIC_TYPE = /^(u?int\d*|address|bool|bytes([1-9]|[12]\d|3[012]))$/;

/**
 * A decoder of `fn`'s return data as one object, field name → value, when every returned value is a static type
 * (one word each, in order; a struct of static fields is laid out inline): addresses checksummed, integers as
 * bigint, fixed bytes as lower-case hex. Any dynamic field falls back to the ABI coder, so the result is the same.
 */
export function staticDecoder(iface: Interface, fn: string): (data: string) => Record<string, StaticValue> {
  const outputs = iface.getFunction(fn)!.outputs;
  const fields = outputs.length === 1 && outputs[0].baseType === "tuple" ? outputs[0].components! : outputs;
  const words = wordDecoder(fields);
  if (words) return words;
  return (data) => {
    const r = iface.decodeFunctionResult(fn, data);
    const value = outputs.length === 1 && outputs[0].baseType === "tuple" ? r[0] : r;
    return Object.fromEntries(fields.map((f, i) => [f.name, value[i] as StaticValue]));
  };
}

/**
 * Named static fields laid out one word each (a static struct, an event's non-indexed data); undefined otherwise.
 * With `skipDynamic`, dynamic fields are left out (their head word is only an offset) and the static ones decoded
 * from the head, as an event's strings are skipped when only its numbers matter.
 */
export function wordDecoder(
  fields: readonly { name: string; type: string }[],
  skipDynamic = false,
): ((data: string) => Record<string, StaticValue>) | undefined {
  const isStatic = (f: { name: string; type: string }) => Boolean(f.name) && STATIC_TYPE.test(f.type);
  if (!skipDynamic && !fields.every(isStatic)) return undefined;
  const used = fields.map((f, i) => ({ name: f.name, i, convert: isStatic(f) ? wordConverter(f.type) : undefined }));
  const decoded = used.filter((u) => u.convert);
  return (data) => {
    const words = wordsOf(data, fields.length);
    const out: Record<string, StaticValue> = {};
    for (const u of decoded) out[u.name] = u.convert!(words[u.i]);
    return out;
  };
}

function wordConverter(type: string): (w: string) => StaticValue {
  if (type === "address") return (w) => checksummed("0x" + w.slice(24));
  if (type === "bool") return (w) => w !== "0".repeat(64);
  if (type.startsWith("bytes")) {
    const n = Number(type.slice(5));
    return (w) => "0x" + w.slice(0, 2 * n);
  }
  if (type.startsWith("int")) {
    const bits = Number(type.slice(3) || 256);
    return (w) => BigInt.asIntN(bits, BigInt("0x" + w));
  }
  return (w) => BigInt("0x" + w);
}

/** Checksummed addresses, remembered: job views and logs name the same clients and providers over and over. */
const CHECKSUMS = new Map<string, string>();
export function checksummed(lower: string): string {
  let a = CHECKSUMS.get(lower);
  if (a === undefined) {
    if (CHECKSUMS.size >= 50_000) CHECKSUMS.clear();
    CHECKSUMS.set(lower, (a = getAddress(lower)));
  }
  return a;
}
