/**
 * The Quality Guard's decision logic: is a reported checkpoint honest training from the job's accepted state, and
 * what is the final model worth? No chain I/O here: the caller passes the job's on-chain facts and a checkpoint
 * store; the only effects are store reads and onnxruntime runs (replay and evaluation).
 *
 * A checkpoint is accepted only if all of these hold (see docs/ARCHITECTURE.md, "Training work and the Quality Guard"):
 * 1. integrity: the blob's sha256 equals the reported hash, it decodes, holds no NaN/Inf, names the job's template
 *    and seed, ends at the reported step and links to the job's accepted checkpoint (an old checkpoint replayed
 *    links elsewhere);
 * 2. hash chain: it starts at the accepted state's hash, its segments are exactly the template default long
 *    (about interval/20: longer would cost more to check, shorter would thin the sample), and the state at every
 *    segment boundary is stored, readable and well formed (decodes, the template's shapes, labelled with its
 *    step, finite); a defective one is proven by replaying up to it, so it is a fault, not a plain refusal;
 * 3. replay: whole segments, k/m of them on average for a budget of k steps (chosen by the verifier's own
 *    salt, so the provider cannot guess them), plus the last step, each replayed from its stored start state,
 *    reproduce every committed hash bit for bit (workloads/segments.ts);
 * 4. evaluation (verifier/ruleEval.ts): the loss is finite and held-out accuracy does not drop below the accepted
 *    state's by more than the template's maxRegression plus the chance error of n held-out examples at a
 *    false-alarm rate of 10⁻⁴ (regressionTolerance); a violation escalates to replaying every step (see below).
 */
import {
  blobHash,
  CheckpointFormatError,
  committedAt,
  MAX_PROFILE_LENGTH,
  UnreadableBlobError,
  decodeCheckpoint,
  isProvenProfile,
  replayUnprovenReason,
  HashMismatchError,
  initialState,
  NonFiniteError,
  maxSegmentSteps,
  checkNumbers,
  defaultSegmentSteps,
  NotFoundError,
  replayStep,
  sampleSpans,
  stateHash,
  storedSteps,
  StoreUnavailableError,
  ZERO_HASH,
  type Span,
  type Checkpoint,
  type CheckpointStore,
  type EvalResult,
  type Template,
  type Trainer,
  type TrainingState,
  workSeedOf,
} from "../workloads/index.ts";
import { ruleEvaluator } from "./ruleEval.ts";
import { heldoutPerClass } from "../workloads/metric.ts";
import {
  checkLayoutNumbers,
  checkStateShape,
  readStateLayout,
  stateBlobBytes,
  stateOfLayout,
  type StateLayout,
} from "../workloads/state.ts";
import { ByteReader } from "../workloads/bytes.ts";
import { BlobStore } from "../workloads/store.ts";
import { minSegmentSteps } from "../workloads/segments.ts";

/** Why a checkpoint was refused. Tests and logs branch on these codes, never on the detail text. */
export type ReasonCode =
  | "blob-missing" // the reported blob is not in the store (the runner waits a grace period before refusing)
  | "blob-unreadable" // something the reporter controls is under a blob's name: no plain blob, or oversized (same grace)
  | "hash-mismatch" // a blob's bytes do not hash to the hash that names it
  | "undecodable" // not a checkpoint / state blob of a known format
  | "inconsistent" // structure inconsistent, e.g. the embedded state does not match the last committed hash
  | "non-finite" // NaN or ±Infinity in weights or momentum
  | "wrong-template" // checkpoint names another template than the job
  | "wrong-seed" // checkpoint names another data-order seed than the job
  | "wrong-step" // checkpoint ends at another step than the one reported on chain
  | "wrong-link" // previous-checkpoint link is not the job's accepted checkpoint (old checkpoint replayed)
  | "wrong-start" // segment does not start at the job's accepted step (skipped steps)
  | "chain-start" // first committed hash is not the accepted state's hash
  | "bad-segments" // segments of another length than the template default (longer cost more to check, shorter thin the sample)
  | "wrong-maker" // the checkpoint names another maker than its reporter (a copied checkpoint pays nobody)
  | "unproven-profile" // committed with an arithmetic profile not proven for the template: its replay proves nothing
  | "chain-gap" // a committed segment-boundary state blob is missing from the store
  | "replay-mismatch" // a replayed step does not reproduce the committed state hash
  | "regression" // held-out accuracy dropped more than the template allows, or the loss is not finite
  | "behaviour"; // a non-honest verifier mode decided without checking (tests and demos only)

/**
 * A replayed step that gave another hash than the committed one, from the committed input state: the evidence a
 * fault claim carries (verifier/claims.ts). `input` and `replayed` are the states (absent when forged).
 */
export type ReplayFault = {
  step: number;
  inputHash: string;
  committedHash: string;
  replayedHash: string;
  input?: TrainingState;
  replayed?: TrainingState;
};

export type CheckpointVerdict = {
  accept: boolean;
  /** Set when a replay mismatch was found: what a fault claim needs. */
  fault?: ReplayFault;
  /** `code: detail`, one per problem found; empty when accepted. */
  reasons: string[];
  codes: ReasonCode[];
  metrics: CheckpointMetrics;
  /** The arithmetic profile the checkpoint committed (undefined when it could not be read): a fault claim's basis. */
  profile?: string;
};

export type CheckpointMetrics = {
  /** Held-out accuracy of the checkpoint state (null when refused before evaluation). */
  accuracy: number | null;
  loss: number | null;
  /** Accuracy of the job's accepted state, the regression baseline. */
  baselineAccuracy: number | null;
  replayedSteps: number;
  /** Steps the checkpoint claims (reported step − accepted step). */
  intervalSteps: number;
  /** This verification's CPU time (process.cpuUsage: user + system), replay and evaluation included. */
  cpuMs: number;
  /** Mean CPU time of one replayed step: an estimate of one training step's cost on this machine. */
  stepCpuMs: number | null;
  /** intervalSteps × stepCpuMs: the training compute this verification checked. */
  trainingCpuMsEstimate: number | null;
  /** True when an evaluation-rule violation escalated the check to replaying every step. */
  fullReplay: boolean;
  /**
   * Where cpuMs went: replaying steps, held-out evaluation; the rest is reading, hashing and decoding blobs.
   * (Absent where nothing was checked, e.g. a verifier behaviour that decides without checking.)
   */
  replayCpuMs?: number;
  evalCpuMs?: number;
  /** Remarks that did not change the decision. */
  notes: string[];
};

export type JobFacts = {
  seed: string;
  templateId: string;
  acceptedStep: number;
  /** ZERO_HASH before the first accepted checkpoint. */
  acceptedHash: string;
};

/** A report as the escrow holds it: its step, its hash and its reporter (`pendingProvider`). */
export type Report = { step: number; hash: string; provider: string };

/** A small least-recently-used map, so a long-running verifier's memory stays bounded. */
export class Lru<K, V> {
  private map = new Map<K, V>();
  private max: number;
  constructor(max: number) {
    this.max = max;
  }
  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as K);
  }
  get size(): number {
    return this.map.size;
  }
}

/**
 * A state the verifier keeps between checkpoints of a job (its accepted state, or one it checked that may become
 * it), with what identifies it: a hit is used only when every field matches the job's on-chain facts.
 */
export type CachedState = {
  state: TrainingState;
  /** stateHash(state): the hash the next checkpoint must start from. */
  hash: string;
  templateId: string;
  seed: string;
  step: number;
  /** The checkpoint blob the state was decoded from (hash-checked), ZERO_HASH for an initial state. */
  checkpointHash: string;
};

/**
 * Memo of evaluations (by template and state hash) and of states that may become a job's accepted state (by checkpoint hash, or
 * `initial:<template>:<seed>`), so the next checkpoint of a job neither re-reads nor re-evaluates its baseline.
 */
export type VerifyCache = {
  evals: Lru<string, EvalResult>;
  states: Lru<string, CachedState>;
};

export const newVerifyCache = (maxStates = 32): VerifyCache => ({ evals: new Lru(1024), states: new Lru(maxStates) });

/** The cache key of a job's accepted state (see VerifyCache). */
const acceptedKey = (templateId: string, job: JobFacts) =>
  job.acceptedStep === 0
    ? `initial:${templateId.toLowerCase()}:${job.seed.toLowerCase()}`
    : job.acceptedHash.toLowerCase();

/**
 * Whether a cached state is the job's accepted state: the template, seed and step the chain names, and for a checked
 * checkpoint the very blob the chain accepted. Anything else (another job's state, a state remembered under a key it
 * does not belong to, a checkpoint the chain did not accept) is not used: the state is read again.
 */
export function cachedStateFits(e: CachedState, templateId: string, job: JobFacts): boolean {
  const checkpoint = job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash;
  return (
    sameHex(e.templateId, templateId) &&
    sameHex(e.templateId, job.templateId) &&
    sameHex(e.seed, job.seed) &&
    e.step === job.acceptedStep &&
    e.state.step === job.acceptedStep &&
    sameHex(e.checkpointHash, checkpoint)
  );
}

/** The committed hash of a decoded checkpoint's state (decoding checked that the state matches it). */
const finalHashOf = (c: Checkpoint) => committedAt(c, c.step);

/** What a replay needs, for a checkpoint, a final model or a claim: the template, its trainer, the store, a cache. */
export type ReplayContext = {
  template: Template;
  trainer: Trainer;
  store: CheckpointStore;
  cache?: VerifyCache;
};

export type VerifyCheckpointInput = ReplayContext & {
  job: JobFacts;
  report: Report;
  /** bytes32 hex, secret to this verifier (see sampleSalt in work.ts). */
  sampleSalt: string;
  /** Steps replayed besides the last one, which is always replayed. */
  samples: number;
};

/** The verifier could not reach a decision (its own inputs are missing); it must not sign, and retries later. */
export class CannotVerifyError extends Error {}

/**
 * The store could not be read (timeouts, 5xx, EMFILE, cut-off bodies, past the store's own retries): says nothing
 * about the checkpoint, so it is never a refusal. The runner retries and, past a bound, abstains.
 */
export class StoreOutageError extends CannotVerifyError {}

const outage = (err: StoreUnavailableError, context: string) => new StoreOutageError(`${context}: ${err.message}`);

class Refusal extends Error {
  code: ReasonCode;
  fault?: ReplayFault;
  constructor(code: ReasonCode, detail: string, fault?: ReplayFault) {
    super(detail);
    this.code = code;
    this.fault = fault;
  }
}

const sameHex = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
/** Accuracies come out of float32 graphs: k/N rounded to float32, so compare with a little slack. */
const FLOAT_SLACK = 1e-6;

/** Maps workload errors to reason codes; anything else is the verifier's own failure and propagates. */
function refusalOf(err: unknown, context: string): Refusal {
  if (err instanceof Refusal) return err;
  if (err instanceof StoreUnavailableError) throw outage(err, context);
  if (err instanceof NotFoundError)
    return new Refusal(context === "checkpoint" ? "blob-missing" : "chain-gap", `${context}: ${err.message}`);
  if (err instanceof UnreadableBlobError) return new Refusal("blob-unreadable", `${context}: ${err.message}`);
  if (err instanceof HashMismatchError) return new Refusal("hash-mismatch", `${context}: ${err.message}`);
  if (err instanceof NonFiniteError) return new Refusal("non-finite", `${context}: ${err.message}`);
  if (err instanceof CheckpointFormatError) {
    const code: ReasonCode = err.code === "INCONSISTENT" ? "inconsistent" : "undecodable";
    return new Refusal(code, `${context}: ${err.code} ${err.message}`);
  }
  throw err;
}

/** Bytes of an encoded state of `t` (the same for every state of a template), from its parameters. */
const stateBytes = new WeakMap<Template, number>();
export function stateBytesOf(t: Template): number {
  let n = stateBytes.get(t);
  if (n === undefined) stateBytes.set(t, (n = stateBlobBytes(t)));
  return n;
}

/** Whether `store` is the verified store as written (its get hash-checks every read), not a wrapper or a fake. */
const verifiesReads = (store: CheckpointStore): boolean =>
  store instanceof BlobStore && store.get === BlobStore.prototype.get;

/**
 * Reads the blob named `hash`, its bytes hashed exactly once: by BlobStore.get (which reads again on a mismatch
 * and throws HashMismatchError), or here for any other CheckpointStore (a store need not verify).
 */
export async function readChecked(store: CheckpointStore, hash: string, maxBytes?: number): Promise<Uint8Array> {
  const bytes = await store.get(hash, maxBytes);
  if (!verifiesReads(store)) {
    const actual = blobHash(bytes);
    if (!sameHex(actual, hash)) throw new HashMismatchError(hash.toLowerCase(), actual);
  }
  return bytes;
}

/**
 * The most bytes an honest checkpoint of `steps` steps of `t` holds: its header (a profile of at most
 * MAX_PROFILE_LENGTH), one hash per step and one state. Reads stop there (before, reads had no size bound).
 */
export const checkpointBytesBound = (t: Template, steps: number): number =>
  512 + MAX_PROFILE_LENGTH + 32 * Math.max(0, steps) + stateBytesOf(t);

/** Fetches and decodes the reported blob, checking its hash ourselves (a store need not verify). */
export async function loadReported(store: CheckpointStore, hash: string, maxBytes?: number): Promise<Checkpoint> {
  try {
    return decodeCheckpoint(await readChecked(store, hash, maxBytes));
  } catch (err) {
    throw refusalOf(err, "checkpoint");
  }
}

/** The job's accepted state: the initial state before the first acceptance, else the accepted checkpoint's state. */
export async function acceptedState(
  template: Template,
  store: CheckpointStore,
  job: JobFacts,
  cache?: VerifyCache,
): Promise<{ state: TrainingState; hash: string }> {
  const key = acceptedKey(template.templateId, job);
  const hit = cache?.states.get(key);
  if (hit && cachedStateFits(hit, template.templateId, job)) return hit;
  let entry: CachedState;
  const facts = { templateId: template.templateId, seed: job.seed, step: job.acceptedStep };
  if (job.acceptedStep === 0) {
    const state = initialState(template, job.seed);
    entry = { state, hash: stateHash(state), ...facts, checkpointHash: ZERO_HASH };
  } else {
    let c: Checkpoint;
    try {
      c = decodeCheckpoint(await readChecked(store, job.acceptedHash));
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw outage(err, `accepted checkpoint ${job.acceptedHash}`);
      throw new CannotVerifyError(`accepted checkpoint ${job.acceptedHash} unavailable: ${(err as Error).message}`);
    }
    entry = { state: c.state, hash: finalHashOf(c), ...facts, checkpointHash: job.acceptedHash };
  }
  cache?.states.set(key, entry);
  return entry;
}

/**
 * Held-out evaluation, memoised per (template, state, evaluator): the same weights score differently on another
 * split. `rule` uses the verifier's fast evaluator (verifier/ruleEval.ts) for the evaluation rule; the verdict
 * uses the template's own graph, whose result every verifier must compute bit for bit.
 */
async function evaluate(
  trainer: Trainer,
  state: TrainingState,
  hash: string,
  cache?: VerifyCache,
  rule = false,
): Promise<EvalResult> {
  const key = `${rule ? "rule:" : ""}${trainer.template.templateId}:${hash.toLowerCase()}`;
  const hit = cache?.evals.get(key);
  if (hit) return hit;
  const r = rule ? await (await ruleEvaluator(trainer.template))(state) : await trainer.evaluate(state);
  cache?.evals.set(key, r);
  return r;
}

/** Cheap header checks against the job; every problem is listed. */
function headerProblems(
  template: Template,
  c: Checkpoint,
  job: JobFacts,
  report: Report,
  startHash: string,
): Refusal[] {
  const out: Refusal[] = [];
  if (!sameHex(c.maker, report.provider))
    out.push(new Refusal("wrong-maker", `checkpoint made by ${c.maker}, reported by ${report.provider}`));
  if (!isProvenProfile(template, c.profile))
    out.push(
      new Refusal("unproven-profile", `${replayUnprovenReason(template, c.profile)}: its replay is no evidence`),
    );
  if (!sameHex(c.templateId, job.templateId))
    out.push(new Refusal("wrong-template", `checkpoint template ${c.templateId}, job ${job.templateId}`));
  if (!sameHex(c.seed, job.seed)) out.push(new Refusal("wrong-seed", `checkpoint seed ${c.seed}, job ${job.seed}`));
  if (c.step !== report.step)
    out.push(new Refusal("wrong-step", `checkpoint ends at step ${c.step}, reported ${report.step}`));
  if (c.step <= c.startStep)
    out.push(new Refusal("wrong-step", `checkpoint covers no step: it ends at ${c.step}, starts at ${c.startStep}`));
  const link = job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash;
  if (!sameHex(c.prevCheckpointHash, link)) {
    out.push(new Refusal("wrong-link", `links to ${c.prevCheckpointHash}, accepted checkpoint is ${link}`));
  }
  if (c.startStep !== job.acceptedStep)
    out.push(new Refusal("wrong-start", `segment starts at step ${c.startStep}, accepted step is ${job.acceptedStep}`));
  if (!sameHex(c.startStateHash, startHash))
    out.push(new Refusal("chain-start", `segment starts at state ${c.startStateHash}, accepted state is ${startHash}`));
  const n = c.step - c.startStep;
  const [shortest, longest] = [minSegmentSteps(n), maxSegmentSteps(n)];
  if (c.segmentSteps < shortest || c.segmentSteps > longest) {
    const allowed = shortest === longest ? `exactly ${longest}` : `${shortest} to ${longest}`;
    out.push(new Refusal("bad-segments", `segments of ${c.segmentSteps} steps, ${allowed} for ${n} steps`));
  }
  return out;
}

/**
 * The steps a verifier replays: whole segments sampled by its salt for a budget of k steps, plus the last step
 * (the state that would be paid for). m is the checkpoint's segment length (default: the template default).
 */
export function stepsToReplay(
  salt: string,
  startStep: number,
  endStep: number,
  k: number,
  m = defaultSegmentSteps(endStep - startStep),
): number[] {
  return sampleSpans(salt, startStep, endStep, m, k).flatMap((s) =>
    Array.from({ length: s.to - s.from }, (_, i) => s.from + 1 + i),
  );
}

/**
 * Checks one boundary state's bytes, pure, without decoding its numbers: its layout (the numbers stay views of
 * `bytes`), or the defect they prove. The same checks, in the same order, as decodeState then checkStateShape then
 * the label: structure, finite numbers, the template's names and shapes, the step.
 */
export function boundaryDefect(
  t: Template,
  bytes: Uint8Array,
  step: number,
): { layout: StateLayout } | { code: ReasonCode; why: string } {
  let layout: StateLayout;
  try {
    const r = new ByteReader(bytes);
    layout = readStateLayout(r);
    r.end();
    checkLayoutNumbers(layout);
    checkStateShape(t, layout);
  } catch (err) {
    if (err instanceof NonFiniteError) return { code: "non-finite", why: err.message };
    if (err instanceof CheckpointFormatError) {
      const code: ReasonCode = err.code === "INCONSISTENT" ? "inconsistent" : "undecodable";
      return { code, why: `${err.code} ${err.message}` };
    }
    throw err;
  }
  if (layout.step !== step) return { code: "replay-mismatch", why: `is labelled step ${layout.step}` };
  return { layout };
}

/** Whether every weight and momentum value is finite. */
export function isFiniteState(s: TrainingState): boolean {
  try {
    checkNumbers(s);
    return true;
  } catch (err) {
    if (err instanceof NonFiniteError) return false;
    throw err;
  }
}

/**
 * What the boundary scan found. `usable`: the steps a replay may start from, ascending (the start state, then every
 * boundary that is stored, readable and well formed); `states`: the ones kept in memory (the start and the sampled
 * spans' starts; others are read again if a proof needs them); `plain`: blobs missing, unreadable or holding other
 * bytes (the store may have lost them, so never a fault); `defect`: the first state whose own bytes (they hash to the
 * committed hash, so they are the provider's commitment) do not decode, hold other shapes than the template's,
 * another step label or a non-finite value.
 */
type Scan = {
  usable: number[];
  states: Map<number, TrainingState>;
  plain: Refusal[];
  defect?: { step: number; problem: Refusal };
};

/** Boundary blobs read at once (each at most one state, so at most this many states' bytes held). */
export const BOUNDARY_READS_IN_FLIGHT = 4;

/**
 * `f` over `items` with at most `limit` calls in flight, results in the items' order. Every call started settles
 * before this returns (a failure is a result, never an unhandled rejection); after a failure that `halts` none is
 * started (a store outage: reading on would only wait out more retries), so the results end at the first gap.
 */
async function inOrder<T, R>(
  items: T[],
  limit: number,
  f: (x: T) => Promise<R>,
  halts: (reason: unknown) => boolean,
): Promise<PromiseSettledResult<R>[]> {
  const out: PromiseSettledResult<R>[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = { status: "fulfilled", value: await f(items[i]) };
      } catch (reason) {
        out[i] = { status: "rejected", reason };
        if (halts(reason)) next = items.length;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Every verifier reads EVERY committed boundary state and checks its form, not only those its sample replays from:
 * a defect is found by each verifier with certainty instead of with the sample's probability. Each blob is read
 * once (a few at a time), hashed once (readChecked) and checked on its raw bytes (boundaryDefect); only the states
 * in `keep` (the sampled spans' starts) are decoded into tensors.
 */
async function scanBoundaries(
  t: Template,
  store: CheckpointStore,
  c: Checkpoint,
  start: TrainingState,
  keep: Set<number>,
): Promise<Scan> {
  const scan: Scan = { usable: [c.startStep], states: new Map([[c.startStep, start]]), plain: [] };
  const steps = storedSteps(c.startStep, c.step, c.segmentSteps);
  const read = async (step: number) => {
    const r = boundaryDefect(t, await readChecked(store, committedAt(c, step), stateBytesOf(t)), step);
    // Decode only what a replay starts from; the blob's bytes are dropped as soon as the check is done.
    return "layout" in r ? { ok: true as const, state: keep.has(step) ? stateOfLayout(r.layout) : undefined } : r;
  };
  const halts = (err: unknown) => err instanceof StoreUnavailableError;
  const results = await inOrder(steps, BOUNDARY_READS_IN_FLIGHT, read, halts);
  for (const [i, step] of steps.entries()) {
    const res = results[i];
    if (!res) break; // never started: an outage before it throws below first
    const context = `state after step ${step}`;
    if (res.status === "rejected") {
      scan.plain.push(refusalOf(res.reason, context)); // a store outage throws: it says nothing of the blob
      continue;
    }
    const r = res.value;
    if ("ok" in r) {
      scan.usable.push(step);
      if (r.state) scan.states.set(step, r.state);
    } else scan.defect ??= { step, problem: new Refusal(r.code, `${context} ${r.why}`) };
  }
  return scan;
}

/** The chain-gap refusal for the boundaries the store does not hold. */
const gapRefusal = (missing: number[]) =>
  new Refusal(
    "chain-gap",
    `no stored state for step(s) ${missing.slice(0, 8).join(", ")}${missing.length > 8 ? ", …" : ""}`,
  );

/** Every segment-boundary state blob must be retrievable (a cheap existence check, no reading or hashing). */
async function gapProblems(store: CheckpointStore, c: Checkpoint): Promise<Refusal[]> {
  const missing: number[] = [];
  for (const step of storedSteps(c.startStep, c.step, c.segmentSteps)) {
    let stored: boolean;
    try {
      stored = await store.has(committedAt(c, step));
    } catch (err) {
      // "cannot tell" is not "missing": an existence check that failed is the verifier's problem, not a gap.
      if (err instanceof StoreUnavailableError) throw outage(err, `state after step ${step}`);
      throw err;
    }
    if (!stored) missing.push(step);
  }
  return missing.length ? [gapRefusal(missing)] : [];
}

/** What replays need: the checkpoint, the scan's usable states, and where each replayed step's CPU ms go. */
type Replayer = {
  trainer: Trainer;
  store: CheckpointStore;
  c: Checkpoint;
  scan: Scan;
  costs: number[];
};

/** A usable committed state: kept by the scan, or read again (it passed the scan, so a failure now is the store's). */
async function usableState(r: Replayer, step: number): Promise<TrainingState> {
  const kept = r.scan.states.get(step);
  if (kept) return kept;
  try {
    const t = r.trainer.template;
    const checked = boundaryDefect(t, await readChecked(r.store, committedAt(r.c, step), stateBytesOf(t)), step);
    // The same hash-checked bytes the scan found usable, so this cannot refuse; kept for the code's sake.
    if (!("layout" in checked)) throw new Refusal(checked.code, `state after step ${step} ${checked.why}`);
    return stateOfLayout(checked.layout);
  } catch (err) {
    throw refusalOf(err, `state after step ${step}`);
  }
}

/**
 * Replays (from, to] from the committed state after `from`. Throws the fault at a finite mismatch; returns
 * "diverged" when a replayed state is not finite (its NaN bits are the device's, so no hash comparison with it is
 * evidence), "reproduced" when every step hashes to its committed state.
 */
async function replayRange(r: Replayer, from: number, to: number): Promise<"reproduced" | "diverged"> {
  let state = await usableState(r, from);
  try {
    for (let step = from + 1; step <= to; step++) state = await replayChecked(r.trainer, r.c, state, step, r.costs);
  } catch (err) {
    if (err instanceof Diverged) return "diverged";
    throw err;
  }
  return "reproduced";
}

/**
 * Proves the committed chain wrong at or before step `to`, replaying from the usable state at `usable[i]`, and
 * while a replay diverges, one usable state further back up to the previous start (so a finite, well-labelled
 * "bomb" state whose next step overflows cannot hide the fabricated steps before it: honest training from the
 * accepted state never diverges in a checkpoint whose final state decodes finite). Throws the fault; returns why
 * nothing was proven: "reproduced" (honest training made the states up to `to`) or "diverged" (from the start).
 * Cost: each state walked back replays only the segment before it, so at most the interval once.
 */
async function proveUpTo(r: Replayer, i: number, to: number): Promise<"reproduced" | "diverged"> {
  for (let j = i; j >= 0; j--) {
    const from = r.scan.usable[j];
    if ((await replayRange(r, from, to)) === "reproduced") return "reproduced";
    to = from;
  }
  return "diverged";
}

/** Index of the last usable state before `step` (the start state at worst). */
const usableBefore = (scan: Scan, step: number) => scan.usable.findLastIndex((s) => s < step);

/**
 * Turns the scan's defective state into a fault, or finds it honest. A replay always yields a decodable state of the
 * template's shapes labelled with its step, so unless it reproduces the committed bytes some step up to the defect
 * replays to another hash than the committed one: a replay mismatch from a committed input, which the finder
 * publishes and the others re-check with one step (verifier/claims.ts) and the escrow slashes. A reproduced state
 * can only be a non-finite one honest training made (a diverged template): a plain refusal, never a slash.
 */
async function proveDefect(r: Replayer, d: NonNullable<Scan["defect"]>): Promise<Refusal> {
  try {
    const why = await proveUpTo(r, usableBefore(r.scan, d.step), d.step);
    return new Refusal(
      d.problem.code,
      `${d.problem.message}, and its replay ${why === "reproduced" ? "reproduces it" : "diverges"}`,
    );
  } catch (err) {
    const e = refusalOf(err, `replay up to step ${d.step}`);
    return e.fault ? new Refusal("replay-mismatch", `${d.problem.message}; proven: ${e.message}`, e.fault) : e;
  }
}

/**
 * Replays each sampled span whose start state the scan found usable (the others' problems are listed already),
 * comparing every step with its committed hash. Throws the first fault; returns the plain problems (a span whose
 * replay diverged and whose start no earlier replay disproves).
 */
async function replaySampled(r: Replayer, spans: Span[]): Promise<Refusal[]> {
  const plain: Refusal[] = [];
  for (const span of spans) {
    const i = r.scan.usable.indexOf(span.from);
    if (i < 0) continue;
    if ((await replayRange(r, span.from, span.to)) === "reproduced") continue;
    if (i > 0 && (await proveUpTo(r, i - 1, span.from)) === "diverged") continue;
    plain.push(new Refusal("non-finite", `the span (${span.from}, ${span.to}] replays to a non-finite state`));
  }
  return plain;
}

/**
 * Replays every step in order from the start state, each from the previous replayed state (bit-identical to the
 * committed one as long as the hashes matched), so no intermediate blob is read: about the cost of training.
 */
async function replaySequential(trainer: Trainer, c: Checkpoint, start: TrainingState, costs: number[]): Promise<void> {
  let state = start;
  for (let step = c.startStep + 1; step <= c.step; step++) state = await replayChecked(trainer, c, state, step, costs);
}

/**
 * A replay that left the finite numbers: its NaN bits are the device's, so comparing its hash proves nothing (two
 * proven devices may differ there). Honest training whose state turns non-finite ends non-finite, and such a
 * checkpoint is refused at decoding, so a checkpoint that reached replay diverges only where it was not trained.
 */
class Diverged extends Refusal {
  constructor(step: number) {
    super("non-finite", `step ${step} replays to a non-finite state`);
  }
}

/**
 * Replays `step` from `state` (its CPU time into `costs`) and refuses unless it hashes to the committed state: a
 * fault when the replayed state is finite, Diverged when it is not.
 */
async function replayChecked(
  trainer: Trainer,
  c: Checkpoint,
  state: TrainingState,
  step: number,
  costs: number[],
): Promise<TrainingState> {
  const t0 = process.cpuUsage();
  let next: TrainingState;
  try {
    next = await replayStep(trainer, state, workSeedOf(c), step);
  } catch (err) {
    throw refusalOf(err, `replay of step ${step}`);
  }
  const actual = stateHash(next);
  costs.push(cpuMsSince(t0));
  if (!isFiniteState(next)) throw new Diverged(step);
  const committed = committedAt(c, step);
  if (!sameHex(actual, committed)) {
    const inputHash = committedAt(c, step - 1);
    const fault = { step, inputHash, committedHash: committed, replayedHash: actual, input: state, replayed: next };
    throw new Refusal("replay-mismatch", `step ${step} replays to ${actual}, committed ${committed}`, fault);
  }
  return next;
}

export function cpuMsSince(t0: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

/** Decides one reported checkpoint. Throws CannotVerifyError when the verifier itself lacks an input. */
export async function verifyCheckpoint(input: VerifyCheckpointInput): Promise<CheckpointVerdict> {
  const { template, trainer, store, job, report, cache } = input;
  const t0 = process.cpuUsage();
  const metrics: CheckpointMetrics = {
    accuracy: null,
    loss: null,
    baselineAccuracy: null,
    replayedSteps: 0,
    intervalSteps: report.step - job.acceptedStep,
    cpuMs: 0,
    stepCpuMs: null,
    trainingCpuMsEstimate: null,
    fullReplay: false,
    replayCpuMs: 0,
    evalCpuMs: 0,
    notes: [],
  };
  const committed: { profile?: string } = {};
  const done = (problems: Refusal[]): CheckpointVerdict => {
    metrics.cpuMs = cpuMsSince(t0);
    return {
      accept: problems.length === 0,
      fault: problems.find((p) => p.fault)?.fault,
      reasons: problems.map((p) => `${p.code}: ${p.message}`),
      codes: problems.map((p) => p.code),
      metrics,
      profile: committed.profile,
    };
  };
  if (!sameHex(template.templateId, job.templateId)) {
    throw new CannotVerifyError(`verifier loaded template ${template.templateId} for a job of ${job.templateId}`);
  }
  const start = await acceptedState(template, store, job, cache);

  let c: Checkpoint;
  try {
    c = await loadReported(store, report.hash, checkpointBytesBound(template, report.step - job.acceptedStep));
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return done([err]);
  }
  committed.profile = c.profile;
  const header = headerProblems(template, c, job, report, start.hash);
  if (header.length) return done(header);
  const gaps = await gapProblems(store, c);
  if (gaps.length) return done(gaps);

  const sampled = sampleSpans(input.sampleSalt, c.startStep, c.step, c.segmentSteps, input.samples);
  const scan = await scanBoundaries(template, store, c, start.state, new Set(sampled.map((s) => s.from)));
  const costs: number[] = [];
  const account = () => {
    metrics.replayedSteps = costs.length;
    metrics.replayCpuMs = costs.reduce((a, b) => a + b, 0);
    metrics.stepCpuMs = costs.length ? costs.reduce((a, b) => a + b, 0) / costs.length : null;
    metrics.trainingCpuMsEstimate = metrics.stepCpuMs === null ? null : metrics.stepCpuMs * metrics.intervalSteps;
  };
  // A fault goes first (it is what a claim carries); the plain problems stay listed after it.
  const problems = [...scan.plain];
  const r: Replayer = { trainer, store, c, scan, costs };
  try {
    if (scan.defect) problems.unshift(await proveDefect(r, scan.defect));
    if (!problems[0]?.fault) problems.push(...(await replaySampled(r, sampled)));
  } catch (err) {
    problems.unshift(refusalOf(err, "replay"));
  } finally {
    account();
  }
  if (problems.length) return done(problems);

  // If this checkpoint is accepted, its state is the job's next baseline: remember it under its blob hash.
  cache?.states.set(report.hash.toLowerCase(), {
    state: c.state,
    hash: finalHashOf(c),
    templateId: c.templateId,
    seed: c.seed,
    step: c.step,
    checkpointHash: report.hash,
  });
  const regression = await regressionProblem(template, trainer, c, start, metrics, cache);
  if (!regression) return done([]);
  // A breach of the evaluation rule is evidence, not proof: honest work breaks it by chance at the rule's
  // false-alarm rate (and, before the rule accounted for the held-out sample size, in about 1 % of MNIST
  // checkpoints), and a refusal would make every next provider reproduce the same state and be refused too.
  // So a regression escalates to a full replay: bit-exact training of the whole segment is accepted (noted),
  // anything else is refused. This also catches fabricated steps that sampling missed but that hurt accuracy.
  metrics.fullReplay = true;
  try {
    await replaySequential(trainer, c, start.state, costs);
  } catch (err) {
    return done([refusalOf(err, "full replay"), regression]);
  } finally {
    account();
  }
  metrics.notes.push(`${regression.message}; accepted because a full replay reproduced every step`);
  return done([]);
}

/**
 * The evaluation rule's false-alarm rate: the chance that work which did not lower the held-out accuracy of the
 * population the split was drawn from still escalates, per checkpoint. At 10⁻⁴ a job of 1,000 checkpoints escalates
 * honest work by chance with probability below 10 %, and a full replay then accepts it anyway.
 */
export const EVAL_FALSE_ALARM_RATE = 1e-4;
/** The one-sided standard normal quantile of EVAL_FALSE_ALARM_RATE: P(Z > 3.719) = 10⁻⁴. */
const EVAL_Z = 3.719;

/**
 * Held-out examples the template's evaluation scores: heldoutPerClass of every class (data.ts), or for a text the
 * held-out windows (each scored on all its positions).
 */
export function heldoutCount(t: Template): number {
  const data = t.descriptor.data;
  return data.kind === "text" ? data.heldoutWindows : heldoutPerClass(data) * t.family.classes(t.descriptor);
}

/**
 * The largest accuracy drop the rule lets pass: the template's maxRegression (how much honest SGD may truly lose
 * between checkpoints) plus what measuring both accuracies on the same n held-out examples can add by chance at
 * EVAL_FALSE_ALARM_RATE, z·√((a₀(1−a₀) + a₁(1−a₁))/n). That is the standard error of the difference of two
 * independent proportions (normal approximation); the two models are scored on the same examples, whose
 * correlation only shrinks the true error, so the false-alarm rate is at most α. For MNIST (n = 1,000) the drop
 * allowed is 0.02 + 0.050 at accuracies near 0.9 (0.02 + 0.083 near 0.5); for blobs-tiny (n = 128) 0.05 + 0.14.
 */
export function regressionTolerance(t: Template, baselineAccuracy: number, accuracy: number): number {
  const rules = t.descriptor.evalRules;
  if ("metric" in rules) throw new Error(`${t.descriptor.name} is held to its loss, not its accuracy`);
  const variance = (a: number) => Math.max(0, a * (1 - a));
  const se = Math.sqrt((variance(baselineAccuracy) + variance(accuracy)) / heldoutCount(t));
  return rules.maxRegression + EVAL_Z * se;
}

/**
 * The loss rule's largest allowed rise of the mean held-out loss: maxLossIncrease (how much honest training may
 * truly lose between checkpoints) plus z·s/√W, where s is the standard deviation over the W held-out windows of
 * each window's change of loss. The two models are scored on the same windows, so the change is a paired mean,
 * and by the central limit theorem (W = 256 windows of 64 symbols) the chance that work which did not raise the
 * expected loss by more than maxLossIncrease breaks the rule is at most EVAL_FALSE_ALARM_RATE.
 */
export function lossTolerance(maxLossIncrease: number, baseline: Float32Array, now: Float32Array): number {
  const W = baseline.length;
  if (now.length !== W || W < 2) throw new Error(`window losses of ${W} and ${now.length} windows`);
  let mean = 0;
  for (let i = 0; i < W; i++) mean += now[i] - baseline[i];
  mean /= W;
  let ss = 0;
  for (let i = 0; i < W; i++) ss += (now[i] - baseline[i] - mean) ** 2;
  return maxLossIncrease + EVAL_Z * Math.sqrt(ss / (W - 1) / W);
}

/** The evaluation rule, pure: why `now` breaks it against the accepted state's `baseline`, or undefined. */
export function evaluationProblem(t: Template, baseline: EvalResult, now: EvalResult): string | undefined {
  if (!Number.isFinite(now.loss) || !Number.isFinite(now.accuracy)) {
    return `held-out loss ${now.loss}, accuracy ${now.accuracy}`;
  }
  const rules = t.descriptor.evalRules;
  if ("metric" in rules) {
    if (!baseline.windowLoss || !now.windowLoss) throw new Error("a loss rule needs each held-out window's loss");
    const tolerance = lossTolerance(rules.maxLossIncrease, baseline.windowLoss, now.windowLoss);
    if (now.loss <= baseline.loss + tolerance + FLOAT_SLACK) return undefined;
    return (
      `held-out loss ${now.loss.toFixed(4)} is above ${baseline.loss.toFixed(4)} + ${tolerance.toFixed(4)} ` +
      `(maxLossIncrease ${rules.maxLossIncrease} + chance at α ${EVAL_FALSE_ALARM_RATE} over ${heldoutCount(t)} windows)`
    );
  }
  const tolerance = regressionTolerance(t, baseline.accuracy, now.accuracy);
  if (now.accuracy < baseline.accuracy - tolerance - FLOAT_SLACK) {
    return (
      `held-out accuracy ${now.accuracy.toFixed(4)} is below ${baseline.accuracy.toFixed(4)} − ${tolerance.toFixed(4)} ` +
      `(maxRegression ${rules.maxRegression} + chance at α ${EVAL_FALSE_ALARM_RATE} on ` +
      `${heldoutCount(t)} examples)`
    );
  }
  return undefined;
}

/** Evaluates the accepted state and the checkpoint's (memoised) and applies the evaluation rule. */
async function regressionProblem(
  template: Template,
  trainer: Trainer,
  c: Checkpoint,
  start: { state: TrainingState; hash: string },
  metrics: CheckpointMetrics,
  cache?: VerifyCache,
): Promise<Refusal | undefined> {
  const t0 = process.cpuUsage();
  const baseline = await evaluate(trainer, start.state, start.hash, cache, true);
  const now = await evaluate(trainer, c.state, finalHashOf(c), cache, true);
  metrics.evalCpuMs = cpuMsSince(t0);
  metrics.baselineAccuracy = baseline.accuracy;
  metrics.accuracy = now.accuracy;
  metrics.loss = now.loss;
  const problem = evaluationProblem(template, baseline, now);
  return problem === undefined ? undefined : new Refusal("regression", problem);
}

export type FinalVerdict = {
  modelHash: string;
  /** Held-out accuracy in basis points (what `submitVerdict` carries). */
  metric: bigint;
  passed: boolean;
  accuracy: number | null;
  loss: number | null;
  reasons: string[];
  cpuMs: number;
};

export type VerifyFinalInput = ReplayContext & { job: JobFacts & { totalSteps: number } };

/** A metric in units of 10⁻⁴; every verifier must compute the same integer or their verdict digests differ. */
export const toBasisPoints = (value: number): bigint => BigInt(Math.round(value * 10_000));

/**
 * The verdict on a job whose every step was accepted: the final accepted checkpoint evaluated on the held-out
 * split; passed when it reaches the template's target accuracy. An accepted model that no longer loads fails.
 */
export async function verifyFinal(input: VerifyFinalInput): Promise<FinalVerdict> {
  const { template, trainer, store, job } = input;
  const t0 = process.cpuUsage();
  const modelHash = job.acceptedHash;
  const fail = (reason: string): FinalVerdict => ({
    modelHash,
    metric: 0n,
    passed: false,
    accuracy: null,
    loss: null,
    reasons: [reason],
    cpuMs: cpuMsSince(t0),
  });
  if (job.acceptedStep !== job.totalSteps) {
    throw new CannotVerifyError(`training incomplete: accepted ${job.acceptedStep} of ${job.totalSteps} steps`);
  }
  let c: Checkpoint;
  try {
    c = await loadReported(store, modelHash);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    const r = err;
    if (r.code === "blob-missing") throw new CannotVerifyError(r.message);
    return fail(`${r.code}: ${r.message}`);
  }
  if (!sameHex(c.templateId, job.templateId) || !sameHex(c.seed, job.seed) || c.step !== job.totalSteps) {
    return fail("wrong-template: final checkpoint does not belong to this job");
  }
  const r = await evaluate(trainer, c.state, finalHashOf(c), input.cache);
  const { metric, passed, shortfall } = finalMetric(template, r);
  return {
    modelHash,
    metric,
    passed,
    accuracy: r.accuracy,
    loss: r.loss,
    reasons: passed ? [] : [`target: ${shortfall}`],
    cpuMs: cpuMsSince(t0),
  };
}

/**
 * The verdict's metric, pure: held-out accuracy in basis points (passed at or above targetAccuracy), or for a loss
 * rule the held-out loss in units of 10⁻⁴ nats per symbol (passed at or below targetLoss). A non-finite evaluation
 * fails: accuracy 0, or the loss metric 2^64 − 1.
 */
export function finalMetric(t: Template, r: EvalResult): { metric: bigint; passed: boolean; shortfall: string } {
  const finite = Number.isFinite(r.accuracy) && Number.isFinite(r.loss);
  const rules = t.descriptor.evalRules;
  if ("metric" in rules) {
    const metric = finite ? toBasisPoints(r.loss) : 2n ** 64n - 1n;
    const passed = finite && metric <= toBasisPoints(rules.targetLoss);
    return { metric, passed, shortfall: `held-out loss ${r.loss.toFixed(4)} above target ${rules.targetLoss}` };
  }
  const accuracy = finite ? r.accuracy : 0;
  const metric = toBasisPoints(accuracy);
  const passed = finite && metric >= toBasisPoints(rules.targetAccuracy);
  return {
    metric,
    passed,
    shortfall: `held-out accuracy ${accuracy.toFixed(4)} below target ${rules.targetAccuracy}`,
  };
}
