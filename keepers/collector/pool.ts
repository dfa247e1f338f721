/**
 * The collector's pool as ONE value with pure transitions: what verifiers signed (by digest), what the collector
 * remembers as decided ("done"), the Safe's owners and threshold as last observed, each owner's last word (the
 * silence rule), per checkpoint its hold clock, per claim when it was first seen and who answered it "not
 * reproduced", per digest when it first had its threshold and when a failed send may be retried.
 *
 *   accept      a verifier's signed post arrives (POST /signatures, POST /claims): 200 / 400 / 409, from the state
 *   acceptCheck a verifier's signed "not reproduced" answer to a claim arrives
 *   observe     chain facts arrive (owners and threshold; the job count and each pooled job at the head, and
 *               where asked below it): entries whose checkpoint is not pending on chain leave the pool
 *   check       what to do now with one digest, given its job as read just before: read a fact first, drop it,
 *               wait (for the chain, a claim, an owner, confirmations) or send it (the packed call)
 *   settled     a decision landed on chain (or is to be forgotten): the entry leaves the pool
 *
 * Nothing here reads the chain, the clock or a file: tick.ts does the I/O and passes what it read (and the time)
 * in. A transition never changes the state it is given; it returns a new one.
 */
import { packSafeSignatures } from "../../sdk/rules/verifierSignatures.ts";
import {
  applicability,
  checkpointOf,
  conflictReason,
  decisionCall,
  isClaim,
  nextStep,
  poolAction,
  readySignatures,
  silentOwners,
  type CheckSubmission,
  type ClaimState,
  type JobState,
  type Pending,
  type Pool,
  type SilenceRule,
  type Submission,
  type Word,
} from "./decide.ts";

/** How many decided digests are remembered (answered "done" when re-sent); the oldest are forgotten first. */
export const DONE_LIMIT = 10_000;

/** A re-post of a digest remembered as done within this long of the last look at the chain is answered "done". */
export const RECHECK_MS = 1_000;

/** How long a failed send waits before it is tried again. */
export const RETRY_AFTER_MS = 30_000;

/**
 * Per checkpoint with entries in the pool: how many, when its hold clock started (the first plain decision on it
 * with its threshold; claims carry their own time), whether the collector saw it pending on chain.
 */
export type CheckpointClock = { readonly entries: number; readonly sinceMs?: number; readonly pendingSeen?: boolean };

export interface PoolState {
  /** Pending decisions by digest (never changed in place: a transition copies what it changes). */
  readonly entries: Pool;
  /**
   * Digests decided on chain or overtaken, and when the chain was last seen so: answered "done", not stored again
   * — unless re-posted RECHECK_MS or more after that look (a reorganisation may have removed the decision): then
   * pooled again and judged against the chain like a fresh signature (`rechecking`).
   */
  readonly done: ReadonlyMap<string, number>;
  /** Digests pooled again from `done`, not yet seen pending on chain. */
  readonly rechecking: ReadonlySet<string>;
  /** The Safe's owners (lower-case) and threshold; `ownersSeen` false until first observed. */
  readonly owners: ReadonlySet<string>;
  readonly threshold: number;
  readonly ownersSeen: boolean;
  /** Per fault digest: when it became a claim (its finder's signature). */
  readonly claimSeen: ReadonlyMap<string, number>;
  /** When each digest was first seen applicable with its threshold. */
  readonly readySince: ReadonlyMap<string, number>;
  /** Per claim digest, the owners' "not reproduced" checks (kept in memory only: verifiers re-post them). */
  readonly notReproduced: ReadonlyMap<string, ReadonlyMap<string, CheckSubmission>>;
  /** Per checkpoint (decide.ts checkpointOf) with pooled entries. */
  readonly checkpoints: ReadonlyMap<string, CheckpointClock>;
  /** Each owner's last word, for the silence rule; `decided` counts checkpoints seen pending and then decided. */
  readonly words: ReadonlyMap<string, Word>;
  readonly decided: number;
  readonly startedMs: number;
  /** Per digest, no send before this time (a send failed). */
  readonly retryAfter: ReadonlyMap<string, number>;
}

/** The collector's settings the transitions use. */
export interface PoolRules {
  /** How long fault claims may hold a plain decision on their checkpoint (decide.ts holdReason). */
  holdMs: number;
  /** How long a plain decision with its threshold waits for owners that have not spoken (decide.ts silenceReason). */
  quorumWaitMs: number;
  silence: SilenceRule;
  /** Blocks below the head whose state must call for a decision before it is sent (0: the head's). */
  depth: number;
}

/** A job as read at one block, and that block's time (seconds; undefined when unknown). */
export type JobAt = { job: JobState; chainTimeS?: bigint };

/** An answer to a POST. */
export type Answer = { status: number; body: Record<string, unknown> };

export function emptyPool(startedMs: number): PoolState {
  return {
    entries: new Map(),
    done: new Map(),
    rechecking: new Set(),
    owners: new Set(),
    threshold: 0,
    ownersSeen: false,
    claimSeen: new Map(),
    readySince: new Map(),
    notReproduced: new Map(),
    checkpoints: new Map(),
    words: new Map(),
    decided: 0,
    startedMs,
    retryAfter: new Map(),
  };
}

/** A copy of `s` whose maps and sets may be changed (entries themselves are copied where they change). */
type Draft = {
  -readonly [K in keyof PoolState]: PoolState[K] extends ReadonlyMap<infer A, infer B>
    ? Map<A, B>
    : PoolState[K] extends ReadonlySet<infer A>
      ? Set<A>
      : PoolState[K];
};

function draft(s: PoolState): Draft {
  return {
    ...s,
    entries: new Map(s.entries),
    done: new Map(s.done),
    rechecking: new Set(s.rechecking),
    owners: new Set(s.owners),
    claimSeen: new Map(s.claimSeen),
    readySince: new Map(s.readySince),
    notReproduced: new Map(s.notReproduced),
    checkpoints: new Map(s.checkpoints),
    words: new Map(s.words),
    retryAfter: new Map(s.retryAfter),
  };
}

const bad = (reason: string): Answer => ({ status: 400, body: { ok: false, reason } });
const doneAnswer = (digest: string): Answer => ({ status: 200, body: { ok: true, digest, state: "done" } });

/** `owner` posted a valid signed body: it is not silent from now on. */
function heard(d: Draft, owner: string, nowMs: number): void {
  d.words.set(owner.toLowerCase(), { atMs: nowMs, decided: d.decided });
}

/**
 * Takes `digest` out of the pool and forgets what was known about it (`remember`: answer "done" when it is
 * re-sent). When the last entry of a checkpoint goes, so does its clock, and a checkpoint the collector saw
 * pending counts as decided (for the silence rule).
 */
function remove(d: Draft, digest: string, remember: boolean, nowMs: number): void {
  const entry = d.entries.get(digest);
  d.entries.delete(digest);
  if (remember) {
    d.done.delete(digest);
    d.done.set(digest, nowMs);
    if (d.done.size > DONE_LIMIT) d.done.delete(d.done.keys().next().value!);
  }
  d.rechecking.delete(digest);
  d.retryAfter.delete(digest);
  d.claimSeen.delete(digest);
  d.readySince.delete(digest);
  d.notReproduced.delete(digest);
  if (!entry) return;
  const at = checkpointOf(entry.decision);
  const clock = at === undefined ? undefined : d.checkpoints.get(at);
  if (!clock) return;
  if (clock.entries > 1) {
    d.checkpoints.set(at!, { ...clock, entries: clock.entries - 1 });
    return;
  }
  if (remember && clock.pendingSeen) d.decided++;
  d.checkpoints.delete(at!);
}

/** The collector saw this entry's checkpoint pending on chain (so its decision counts for the silence rule). */
function sawPending(d: Draft, entry: Pending): void {
  const at = checkpointOf(entry.decision);
  const clock = at === undefined ? undefined : d.checkpoints.get(at);
  if (clock && !clock.pendingSeen) d.checkpoints.set(at!, { ...clock, pendingSeen: true });
}

/** Found pending on chain: a digest pooled again from `done` is no longer being rechecked (reported once). */
function foundPending(d: Draft, digest: string): boolean {
  return d.rechecking.delete(digest);
}

export interface Accepted {
  state: PoolState;
  answer: Answer;
  /** A new signature was pooled (the caller saves the pool and logs it; not while restoring). */
  added: boolean;
  count: number;
  /** Digests to process now, and the job whose decisions to process now (a claim may hold or release them). */
  kick: string[];
  kickJob?: bigint;
}

/**
 * A verifier's signed decision, fault refusal or claim, canonical (tick.ts canonical), with `wrong`: why its digest
 * or signature is wrong (checked by the caller), or undefined. Order of answers: a digest remembered as done (and
 * looked at on chain less than RECHECK_MS ago) is "done" — a valid one by an owner still counts as its word; then a
 * wrong digest or signature (400), a signer that is not an owner (400; while the owners were never observed it is
 * pooled for later checking: `observe` drops what no owner signed), a conflict (409), else pooled (200 pending).
 */
export function accept(
  state: PoolState,
  s: Submission,
  o: { wrong?: string; nowMs: number; restoring?: boolean },
): Accepted {
  const signer = s.signer.toLowerCase();
  const unchanged = (a: Answer): Accepted => ({ state, answer: a, added: false, count: 0, kick: [] });
  // Refusals that change nothing come first and copy nothing (junk is cheap to answer).
  const doneAt = state.done.get(s.digest);
  // A late word is still a word: a valid signature by a current owner ends its silence.
  const owned = !o.restoring && state.owners.has(signer) && !o.wrong;
  if (doneAt !== undefined && !owned) return unchanged(doneAnswer(s.digest));
  if (doneAt === undefined && o.wrong) return unchanged(bad(o.wrong));
  if (doneAt === undefined && state.ownersSeen && !state.owners.has(signer))
    return unchanged(bad(`${s.signer} is not an owner of the verifier Safe`));
  const d = draft(state);
  const answer = (a: Answer): Accepted => ({ state: d, answer: a, added: false, count: 0, kick: [] });
  let recheck = false;
  if (doneAt !== undefined) {
    heard(d, s.signer, o.nowMs);
    if (o.nowMs - doneAt < RECHECK_MS) return answer(doneAnswer(s.digest));
    d.done.delete(s.digest); // looked at again: pooled, and judged against the chain like a fresh signature
    recheck = true;
  }
  if (!o.restoring) heard(d, s.signer, o.nowMs);
  const conflict = conflictReason(d.entries, s);
  if (conflict) return answer({ status: 409, body: { ok: false, reason: conflict } });
  const prev = d.entries.get(s.digest);
  const entry: Pending = {
    digest: s.digest,
    decision: prev?.decision ?? s.decision,
    signatures: new Map(prev?.signatures),
  };
  const added = !entry.signatures.has(signer);
  if (added) entry.signatures.set(signer, { signer: s.signer, signature: s.signature });
  d.entries.set(s.digest, entry);
  if (recheck) d.rechecking.add(s.digest);
  if (isClaim(entry) && !d.claimSeen.has(s.digest)) d.claimSeen.set(s.digest, o.nowMs);
  const at = checkpointOf(s.decision);
  if (!prev && at !== undefined) {
    const clock = d.checkpoints.get(at) ?? { entries: 0 };
    d.checkpoints.set(at, { ...clock, entries: clock.entries + 1 });
  }
  const count = entry.signatures.size;
  const body = { ok: true, digest: s.digest, signatures: count, threshold: d.threshold, state: "pending" };
  const kicking = added && !o.restoring;
  return {
    state: d,
    answer: { status: 200, body },
    added,
    count,
    kick: kicking && count >= d.threshold ? [s.digest] : [],
    kickJob: kicking && s.decision.kind === "fault" ? s.decision.message.jobId : undefined,
  };
}

/**
 * A verifier's signed "checked: not reproduced" answer to a pending claim, with `wrongDigest` (the check's digest
 * is not its message's) and `wrong` (its signature is not its signer's), both checked by the caller. `added`: a
 * new answer (the caller logs it and processes the claim's job).
 */
export function acceptCheck(
  state: PoolState,
  c: CheckSubmission,
  o: { wrongDigest?: string; wrong?: string; nowMs: number },
): { state: PoolState; answer: Answer; added: boolean; claim?: Pending } {
  const claimDigest = c.message.claimDigest;
  if (state.done.has(claimDigest)) return { state, answer: doneAnswer(claimDigest), added: false };
  const claim = state.entries.get(claimDigest);
  if (!claim || claim.decision.kind !== "fault")
    return { state, answer: bad(`no pending claim ${claimDigest}`), added: false };
  const m = c.message;
  if (
    checkpointOf({ kind: "fault", message: { ...m, fault: claim.decision.message.fault } }) !==
    checkpointOf(claim.decision)
  )
    return { state, answer: bad("the check is about another checkpoint than the claim"), added: false };
  const wrong = o.wrongDigest ?? o.wrong;
  if (wrong) return { state, answer: bad(wrong), added: false };
  const signer = c.signer.toLowerCase();
  if (state.ownersSeen && !state.owners.has(signer))
    return { state, answer: bad(`${c.signer} is not an owner of the verifier Safe`), added: false };
  const d = draft(state);
  heard(d, c.signer, o.nowMs);
  const checks = new Map(d.notReproduced.get(claimDigest) ?? []);
  const added = !checks.has(signer);
  checks.set(signer, c);
  d.notReproduced.set(claimDigest, checks);
  return { state: d, answer: { status: 200, body: { ok: true, digest: claimDigest, state: "checked" } }, added, claim };
}

/** Why an entry left the pool when chain facts were observed. */
export type Dropped = { entry: Pending; why: "no job" | "done" | "forget" };

/** What the chain showed, read by tick.ts. */
export interface ChainFacts {
  /** The Safe's owners (any case) and threshold. */
  owners?: { list: string[]; threshold: number };
  /** The escrow's job count at the head (jobs above it do not exist). */
  jobCount?: bigint;
  /**
   * Per job in the pool: the job at the head (absent: unreadable now, its entries kept) and, where asked for
   * (`wantsConfirmed`), at the confirmation depth (absent there: unreadable, so not known confirmed).
   */
  jobs?: ReadonlyMap<bigint, { head?: JobAt; confirmed?: JobAt }>;
}

/** The jobs with entries in the pool, except entries in `skip` (being sent: left to their send). */
export function pooledJobs(state: PoolState, skip: ReadonlySet<string> = new Set()): bigint[] {
  const jobs = new Set<bigint>();
  for (const p of state.entries.values()) if (!skip.has(p.digest)) jobs.add(p.decision.message.jobId);
  return [...jobs];
}

/** Whether `observe` needs the job at the confirmation depth too: the head shows one of its entries done. */
export function wantsConfirmed(state: PoolState, jobId: bigint, head: JobAt, rules: Pick<PoolRules, "depth">): boolean {
  if (rules.depth === 0) return false;
  for (const p of state.entries.values())
    if (p.decision.message.jobId === jobId && poolAction(p.decision, head.job, head.chainTimeS) === "done") return true;
  return false;
}

/**
 * Chain facts arrive. Owners: the set and threshold are replaced; the first time, signatures pooled before by
 * non-owners leave (and entries left with none). Jobs: every entry (except `skip`) whose checkpoint is not pending
 * on chain any more, or never was (decide.ts poolAction) leaves — an entry about a job above the job count is
 * forgotten (not remembered as done: a job created since may make it valid, and verifiers re-post); one the head
 * shows done stays while the block `depth` below does not (a reorganisation may still remove it). An entry that stays
 * and is applicable marks its checkpoint seen pending. `pendingAgain`: digests pooled again from done and now seen
 * pending on chain.
 */
export function observe(
  state: PoolState,
  facts: ChainFacts,
  o: { nowMs: number; depth: number; skip?: ReadonlySet<string> },
): { state: PoolState; dropped: Dropped[]; pendingAgain: Pending[] } {
  const d = draft(state);
  const dropped: Dropped[] = [];
  const pendingAgain: Pending[] = [];
  if (facts.owners) {
    const owners = new Set(facts.owners.list.map((a) => a.toLowerCase()));
    if (!d.ownersSeen) {
      for (const p of [...d.entries.values()]) {
        const kept = [...p.signatures].filter(([signer]) => owners.has(signer));
        if (kept.length === p.signatures.size) continue;
        if (kept.length === 0) {
          remove(d, p.digest, false, o.nowMs);
          dropped.push({ entry: p, why: "forget" });
        } else d.entries.set(p.digest, { ...p, signatures: new Map(kept) });
      }
    }
    d.owners = owners;
    d.threshold = facts.owners.threshold;
    d.ownersSeen = true;
  }
  const skip = o.skip ?? new Set<string>();
  for (const p of [...d.entries.values()]) {
    if (skip.has(p.digest)) continue;
    const jobId = p.decision.message.jobId;
    if (facts.jobCount !== undefined && jobId > facts.jobCount) {
      remove(d, p.digest, false, o.nowMs);
      dropped.push({ entry: p, why: "no job" });
      continue;
    }
    const seen = facts.jobs?.get(jobId);
    if (!seen?.head) continue; // not read (or unreadable now): kept, the next tick tries again
    const { job, chainTimeS } = seen.head;
    const action = poolAction(p.decision, job, chainTimeS);
    if (action === "done" && o.depth > 0 && !confirmedDone(p, seen.confirmed)) continue;
    if (action === "keep") {
      if (applicability(p.decision, job, chainTimeS).action === "send") {
        sawPending(d, p);
        if (foundPending(d, p.digest)) pendingAgain.push(p);
      }
      continue;
    }
    remove(d, p.digest, action === "done", o.nowMs);
    dropped.push({ entry: p, why: action });
  }
  return { state: d, dropped, pendingAgain };
}

/** Whether a decision the head shows done is done at the confirmation depth too (unknown there: not confirmed). */
function confirmedDone(p: Pending, confirmed: JobAt | undefined): boolean {
  if (!confirmed) return false;
  return poolAction(p.decision, confirmed.job, confirmed.chainTimeS) !== "keep";
}

/** The owners silent now (decide.ts isSilent), lower-case. */
export function silentNow(state: PoolState, nowMs: number, rule: SilenceRule): Set<string> {
  const now = { atMs: nowMs, decided: state.decided };
  return silentOwners(state.owners, state.words, { atMs: state.startedMs, decided: 0 }, now, rule);
}

/** The claims the hold rule looks at. */
function claimStates(state: PoolState, nowMs: number): ClaimState[] {
  const out: ClaimState[] = [];
  for (const entry of state.entries.values()) {
    if (entry.decision.kind !== "fault") continue;
    const notReproduced = new Set(state.notReproduced.get(entry.digest)?.keys() ?? []);
    out.push({ entry, firstSeenMs: state.claimSeen.get(entry.digest) ?? nowMs, notReproduced });
  }
  return out;
}

/** What to do with one digest now. */
export type Check =
  /** Not in the pool (any more). */
  | { action: "gone" }
  /** A send failed: not before `retryAfter`. */
  | { action: "retry later" }
  /** Fewer than `threshold` owners signed. */
  | { action: "unsigned" }
  /** Read the job first: at the head (depth 0) or `depth` blocks below it; then check again with it. */
  | { action: "read"; depth: number }
  /** It left the pool (`remember`: answered "done" when re-sent). */
  | { action: "dropped"; remember: boolean; reason: string }
  | {
      action: "wait";
      on: "chain" | "claim" | "owner" | "unconfirmed" | "confirmations";
      reason: string;
    }
  | { action: "send"; reason: string; call: { method: string; args: unknown[] }; signers: string[] };

/**
 * What the pool should do with `digest` now, given its job at the head (`head`) and, once asked for, at the
 * confirmation depth (`confirmed`): read first, drop it (the returned state no longer has it), wait, or send it
 * (decide.ts nextStep, then the confirmations). From the claim hold on it is applicable at the head: its
 * checkpoint was seen pending and its clocks start (in the returned state). `pendingAgain`: it was pooled again
 * from done and is pending on chain again (a reorganisation).
 */
export function check(
  state: PoolState,
  digest: string,
  rules: PoolRules,
  o: { nowMs: number; head?: JobAt; confirmed?: JobAt },
): { state: PoolState; check: Check; pendingAgain?: boolean } {
  const entry = state.entries.get(digest);
  const same = (c: Check) => ({ state, check: c });
  if (!entry) return same({ action: "gone" });
  if ((state.retryAfter.get(digest) ?? -Infinity) > o.nowMs) return same({ action: "retry later" });
  const sigs = readySignatures(entry, new Set(state.owners), state.threshold);
  if (!sigs) return same({ action: "unsigned" });
  if (!o.head) return same({ action: "read", depth: 0 });
  const { decision } = entry;
  const at = checkpointOf(decision);
  const clock = at === undefined ? undefined : state.checkpoints.get(at);
  const now = o.nowMs;
  const step = nextStep(decision, {
    job: o.head.job,
    chainTimeS: o.head.chainTimeS,
    pool: state.entries,
    claims: claimStates(state, now),
    owners: new Set(state.owners),
    threshold: state.threshold,
    nowMs: now,
    holdMs: rules.holdMs,
    // The checkpoint's hold clock: from the first plain decision on it with its threshold (or its first claim).
    holdSinceMs: clock?.sinceMs ?? (clock && decision.kind === "checkpoint" ? now : undefined),
    quorumWaitMs: rules.quorumWaitMs,
    readySinceMs: state.readySince.get(digest) ?? now,
    silent: silentNow(state, now, rules.silence),
  });
  if (step.action === "drop" && step.remember && rules.depth > 0) {
    if (!o.confirmed) return same({ action: "read", depth: rules.depth });
    if (poolAction(decision, o.confirmed.job, o.confirmed.chainTimeS) === "keep")
      return same({ action: "wait", on: "unconfirmed", reason: step.reason });
  }
  if (step.action === "drop") {
    const d = draft(state);
    remove(d, digest, step.remember, now);
    return { state: d, check: { action: "dropped", remember: step.remember, reason: step.reason } };
  }
  if (step.action === "wait" && step.on === "chain") return same({ action: "wait", on: "chain", reason: step.reason });
  // Applicable now: the checkpoint was seen pending, and its clocks start.
  const d = draft(state);
  sawPending(d, entry);
  const pendingAgain = foundPending(d, digest);
  if (!d.readySince.has(digest)) d.readySince.set(digest, now);
  if (clock && decision.kind === "checkpoint" && clock.sinceMs === undefined)
    d.checkpoints.set(at!, { ...d.checkpoints.get(at!)!, sinceMs: now });
  const out = (c: Check) => ({ state: d as PoolState, check: c, pendingAgain });
  if (step.action === "wait") return out({ action: "wait", on: step.on, reason: step.reason });
  // A decision moves money: it goes out only when the state `depth` blocks below the head calls for it too
  // (sdk/node/confirmations.ts), so a report in a block that may still be replaced is not paid for yet.
  if (rules.depth > 0) {
    if (!o.confirmed) return out({ action: "read", depth: rules.depth });
    if (applicability(decision, o.confirmed.job, o.confirmed.chainTimeS).action !== "send")
      return out({ action: "wait", on: "confirmations", reason: `waiting for ${rules.depth} confirmations` });
  }
  const call = decisionCall(decision, packSafeSignatures(sigs));
  return out({ action: "send", reason: step.reason, call, signers: sigs.map((s) => s.signer) });
}

/**
 * A decision landed on chain (`remember`: answered "done" when re-sent), or is to be forgotten: its entry leaves
 * the pool.
 */
export function settled(state: PoolState, digest: string, nowMs: number, remember = true): PoolState {
  const d = draft(state);
  remove(d, digest, remember, nowMs);
  return d;
}

/** A send of `digest` failed: it is not tried again for RETRY_AFTER_MS. */
export function sendFailed(state: PoolState, digest: string, nowMs: number): PoolState {
  const d = draft(state);
  d.retryAfter.set(digest, nowMs + RETRY_AFTER_MS);
  return d;
}

/** `GET /claims`: every pending claim, signed by its finder. */
export function claimsView(state: PoolState): { claims: Record<string, unknown>[] } {
  const claims = [];
  for (const p of state.entries.values()) {
    if (p.decision.kind !== "fault" || !isClaim(p)) continue; // only claims: signed by their finder
    const finder = p.signatures.get(p.decision.message.fault.finder.toLowerCase())!;
    const m = p.decision.message;
    const message = { ...m, jobId: m.jobId.toString(), epoch: m.epoch.toString(), fault: { ...m.fault } };
    claims.push({ kind: "fault", message, digest: p.digest, signer: finder.signer, signature: finder.signature });
  }
  return { claims };
}
