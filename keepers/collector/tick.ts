/**
 * The verdict collector: receives verifiers' signatures (`POST /signatures`), checks each one (signer is a current
 * owner of the verifier Safe; the digest is the escrow's digest of the message; the signature is the signer's
 * SafeMessage signature over it), groups them by digest and, as soon as `threshold` owners signed the same
 * digest, relays acceptCheckpoint / refuseCheckpoint / submitVerdict with the packed signatures.
 *
 * One in-flight transaction per digest, one queue per job (decisions of different jobs proceed concurrently).
 * Before sending, the job's state is read again: a decision already on chain, or overtaken, is dropped, never sent
 * twice. Pending signatures are saved to `--state-file` after every change.
 *
 * Fault claims (`POST /claims`, `GET /claims`): a claim is a FaultRefusal signed by its finder; it pools like any
 * decision (and is saved with them), and `refuseWithFault` is sent once `threshold` owners signed it. While a claim
 * on a checkpoint is unchecked, plain decisions on that checkpoint wait (decide.ts holdReason, at most
 * `claimHoldMs` per checkpoint, from the first claim on it or the plain decision's threshold, whichever came
 * first); a FaultRefusal its finder did not sign holds nothing, and an owner gets one claim per checkpoint
 * (decide.ts conflictReason: 409). The other verifiers' signed "not reproduced" checks are kept in memory only:
 * they re-post them every tick, and until they do the hold simply holds again.
 *
 * Each tick first prunes the pool: entries whose checkpoint is no longer pending on chain (decided, overtaken,
 * lapsed, never reported, or a job that does not exist) leave the pool, the state file and `GET /claims`
 * (decide.ts poolAction). The quorum wait does not wait for owners that are silent by decide.ts `isSilent`.
 *
 * Reorganisations (issue 22): the pool is judged against the chain's state each tick, so it follows the new chain by
 * itself; the one memory of the old chain is the set of digests decided ("done"). A re-post of such a digest is
 * checked against the head once a second: pending again (its deciding block was replaced) → pooled and relayed again.
 */
import { Contract, Signature } from "ethers";
import { confirmationsFor, confirmedBlock } from "../../sdk/confirmations.ts";
import { readJob, type JobView } from "../../sdk/job.ts";
import { SAFE_ABI } from "../../sdk/safeOwners.ts";
import {
  checkpointDecisionDigest,
  claimCheckDigest,
  escrowDomain,
  faultRefusalDigest,
  packSafeSignatures,
  recoverSafeSigner,
  verdictDigest,
} from "../../sdk/verifierSignatures.ts";
import { changeLogger, execute, read, type Call, type KeeperContext, type Outcome } from "../chain.ts";
import { startJsonServer, type JsonResponse } from "../http.ts";
import { runTicks } from "../keeper.ts";
import { pendingView } from "./pendingView.ts";
import type { CollectorConfig } from "./config.ts";
import {
  addSignature,
  applicability,
  checkpointOf,
  conflictReason,
  decisionCall,
  describeDecision,
  isClaim,
  nextStep,
  parseCheck,
  poolAction,
  silentOwners,
  parseSubmission,
  readySignatures,
  SILENCE_DEFAULTS,
  type CheckSubmission,
  type ClaimState,
  type SilenceRule,
  type Word,
  type VerifierDecision,
  type JobState,
  type Pending,
  type Pool,
  type Submission,
} from "./decide.ts";
import { loadSubmissions, savePool, type StoreIdentity } from "./store.ts";

/** Executes a decision some other way than relaying signatures (e.g. as a Safe transaction, see safeTx.ts). */
export interface DecisionExecutor {
  execute(call: Call, log: KeeperContext["logger"]): Promise<Outcome>;
}

export interface CollectorDeps {
  safeAddress: string;
  escrowAddress: string;
  /** Replaces relaying (only with --via-safe-tx). */
  executor?: DecisionExecutor;
}

export type ProcessResult = "waiting" | "sent" | "dropped" | "kept" | "busy";

type CollectorOptions = Pick<CollectorConfig, "stateFile" | "dryRun" | "confirmations"> & {
  claimHoldMs?: number;
  quorumWaitMs?: number;
  /** When an owner counts as silent (decide.ts isSilent); default SILENCE_DEFAULTS. */
  silence?: Partial<SilenceRule>;
};

/** The longest claims hold a plain decision on their checkpoint when the other verifiers do not answer them. */
export const DEFAULT_CLAIM_HOLD_MS = 120_000;

/** How many decided digests are remembered (answered "done" when re-sent); the oldest are forgotten first. */
const DONE_LIMIT = 10_000;

/**
 * Per checkpoint with entries in the pool: how many, when its hold clock started (the first plain decision on it
 * with its threshold; claims carry their own time), whether the collector saw it pending on chain.
 */
type CheckpointClock = { entries: number; sinceMs?: number; pendingSeen?: boolean };

export class Collector {
  /** Pending decisions by digest. */
  readonly pool: Pool = new Map();
  private readonly ctx: KeeperContext;
  private readonly config: CollectorOptions;
  private readonly deps: CollectorDeps;
  private readonly safe: Contract;
  private readonly domain: ReturnType<typeof escrowDomain>;
  private readonly identity: StoreIdentity;
  /**
   * Digests decided on chain or overtaken: answered "done", not stored again — unless a re-post finds the decision
   * pending on chain again (a reorganisation removed it: `undone`).
   */
  private readonly done = new Set<string>();
  /** When a re-posted done digest was last checked against the chain (undone). */
  private readonly doneCheckedAt = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private readonly retryAfter = new Map<string, number>();
  private readonly jobQueues = new Map<string, Promise<unknown>>();
  private readonly quiet = changeLogger();
  private owners = new Set<string>();
  private threshold = 0;
  private ownersReadAt = -Infinity;
  /** Per fault digest: when it became a claim (its finder's signature; since this start). */
  private readonly claimSeen = new Map<string, number>();
  /** When each digest was first seen with its threshold (since this start). */
  private readonly readySince = new Map<string, number>();
  /** Per claim digest, the owners' "not reproduced" checks. */
  private readonly notReproduced = new Map<string, Map<string, CheckSubmission>>();
  /** Per checkpoint (decide.ts checkpointOf) with pooled entries: its hold clock and whether it was seen pending. */
  private readonly checkpoints = new Map<string, CheckpointClock>();
  /** Each owner's last word (decide.ts Word), for the silence rule; `decided` counts checkpoints seen decided. */
  private readonly words = new Map<string, Word>();
  private decided = 0;
  private readonly startedMs: number;

  constructor(ctx: KeeperContext, config: CollectorOptions, deps: CollectorDeps) {
    this.ctx = ctx;
    this.config = config;
    this.deps = deps;
    this.safe = new Contract(deps.safeAddress, SAFE_ABI, ctx.provider);
    this.domain = escrowDomain(ctx.chainId, deps.escrowAddress);
    this.identity = { chainId: ctx.chainId.toString(), escrow: deps.escrowAddress, safe: deps.safeAddress };
    this.startedMs = ctx.nowMs();
  }

  /** The HTTP handler for `POST /signatures`. */
  readonly submit = (body: unknown): Promise<JsonResponse> => this.accept(body, false);

  /** The HTTP handler for `POST /claims`: a claim or its confirmation (a fault refusal), or a "not reproduced". */
  readonly submitClaim = (body: unknown): Promise<JsonResponse> => {
    const kind = (body as { kind?: unknown } | undefined)?.kind;
    if (kind === "check") return this.acceptCheck(body);
    if (kind !== "fault") return Promise.resolve(bad('kind must be "fault" or "check"'));
    return this.accept(body, false);
  };

  /** The HTTP handler for `GET /claims`: every pending claim, signed by its finder. */
  readonly listClaims = (): JsonResponse => {
    const claims = [];
    for (const p of this.pool.values()) {
      if (p.decision.kind !== "fault" || !isClaim(p)) continue; // only claims: signed by their finder
      const finder = p.signatures.get(p.decision.message.fault.finder.toLowerCase())!;
      const m = p.decision.message;
      const message = { ...m, jobId: m.jobId.toString(), epoch: m.epoch.toString(), fault: { ...m.fault } };
      claims.push({ kind: "fault", message, digest: p.digest, signer: finder.signer, signature: finder.signature });
    }
    return { status: 200, body: { claims } };
  };

  /**
   * Re-reads the Safe's owners and threshold, prunes what is no longer pending on chain, then processes every
   * pending digest (checkpoints before verdicts).
   */
  async tick(): Promise<ProcessResult[]> {
    await this.refreshOwners();
    try {
      await this.prune();
    } catch (err) {
      this.ctx.logger.warn("could not prune the pool; the next tick retries", { error: (err as Error)?.message });
    }
    const order = [...this.pool.values()].sort(byJobThenStep);
    return Promise.all(order.map((p) => this.schedule(p.digest)));
  }

  /** The owners silent now (decide.ts isSilent), lower-case. */
  silentOwners(): Set<string> {
    const now = { atMs: this.ctx.nowMs(), decided: this.decided };
    return silentOwners(this.owners, this.words, { atMs: this.startedMs, decided: 0 }, now, this.silenceRule());
  }

  private silenceRule(): SilenceRule {
    return { ...SILENCE_DEFAULTS, ...this.config.silence };
  }

  /**
   * Drops every entry whose checkpoint is not pending on chain any more, or never was (decide.ts poolAction): at
   * one block, the job count, then one read per existing job in the pool; an entry about a job above the count
   * is forgotten without a read (not remembered as done: a job created since may make it valid, and verifiers
   * re-post). Entries being sent are left to their send.
   */
  private async prune(): Promise<void> {
    const byJob = new Map<bigint, Pending[]>();
    for (const p of this.pool.values()) {
      if (this.inFlight.has(p.digest)) continue;
      const jobId = p.decision.message.jobId;
      byJob.set(jobId, [...(byJob.get(jobId) ?? []), p]);
    }
    if (byJob.size === 0) return;
    const { escrow, provider } = this.ctx;
    const block = await read(this.ctx, "head", () => provider.getBlock("latest"));
    if (!block) return;
    const chainTimeS = BigInt(block.timestamp);
    const jobCount = await read(this.ctx, "job count", () => escrow.jobCount({ blockTag: block.number }));
    let changed = false;
    for (const [jobId, entries] of byJob) {
      if (jobId <= jobCount) continue;
      for (const p of entries) this.remove(p.digest, false);
      this.ctx.logger.info("no such job; dropped", { job: jobId, entries: entries.length });
      byJob.delete(jobId);
      changed = true;
    }
    await Promise.all(
      [...byJob].map(async ([jobId, entries]) => {
        let job: JobView;
        try {
          job = await read(this.ctx, `job ${jobId}`, () => readJob(escrow, jobId, block.number));
        } catch {
          return; // unreadable now: kept, the next tick tries again
        }
        for (const p of entries) {
          const action = poolAction(p.decision, job, chainTimeS);
          if (action === "done" && (await this.doneButUnconfirmed(p.decision).catch(() => true))) continue;
          if (action === "keep") {
            if (applicability(p.decision, job, chainTimeS).action === "send") this.sawPending(p.decision);
            continue;
          }
          this.ctx.logger.info(action === "done" ? "no longer pending on chain; dropped" : "not pending now; dropped", {
            ...describeDecision(p.decision),
            digest: p.digest,
            signers: p.signatures.size,
          });
          this.remove(p.digest, action === "done");
          changed = true;
        }
      }),
    );
    if (changed) this.persist();
  }

  /** Loads the saved signatures (re-checked like fresh ones); returns how many were restored. */
  async restore(): Promise<number> {
    await this.refreshOwners();
    const { stateFile } = this.config;
    const bodies = loadSubmissions(stateFile, this.identity, (why) =>
      this.ctx.logger.warn("ignoring state file", { file: stateFile, why }),
    );
    let restored = 0;
    for (const body of bodies) {
      const r = await this.accept(body, true);
      if (r.status === 200) restored++;
      else this.ctx.logger.warn("dropping a saved signature", { reason: (r.body as { reason: string }).reason });
    }
    if (bodies.length > 0) {
      this.persist();
      this.ctx.logger.info("restored pending signatures", {
        file: stateFile,
        signatures: restored,
        decisions: this.pool.size,
      });
    }
    return restored;
  }

  /** Resolves when no decision is being processed. */
  async idle(): Promise<void> {
    while (this.jobQueues.size > 0) await Promise.all([...this.jobQueues.values()]);
  }

  private persist(): void {
    savePool(this.config.stateFile, this.identity, this.pool);
  }

  /** `owner` posted a valid signed body: it is not silent (decide.ts isSilent) from now on. */
  private heard(owner: string): void {
    this.words.set(owner.toLowerCase(), { atMs: this.ctx.nowMs(), decided: this.decided });
  }

  /** The collector saw this checkpoint pending on chain (so its decision counts for the silence rule). */
  private sawPending(d: VerifierDecision): void {
    const at = checkpointOf(d);
    const c = at === undefined ? undefined : this.checkpoints.get(at);
    if (c) c.pendingSeen = true;
  }

  private async refreshOwners(): Promise<void> {
    const [list, t] = await read(this.ctx, "safe owners", () =>
      Promise.all([this.safe.getOwners(), this.safe.getThreshold()]),
    );
    this.owners = new Set((list as string[]).map((o) => o.toLowerCase()));
    this.threshold = Number(t);
    this.ownersReadAt = this.ctx.nowMs();
  }

  /** Why the submission's digest or signature is wrong, or undefined. */
  private verify(s: Submission): string | undefined {
    const d = s.decision;
    const expected =
      d.kind === "checkpoint"
        ? checkpointDecisionDigest(this.domain, d.message)
        : d.kind === "fault"
          ? faultRefusalDigest(this.domain, d.message)
          : verdictDigest(this.domain, d.message);
    if (expected.toLowerCase() !== s.digest) return `digest does not match the message (expected ${expected})`;
    return this.signedBy(s);
  }

  /** Why `s.signature` is not `s.signer`'s SafeMessage signature over `s.digest`, or undefined. */
  private signedBy(s: { digest: string; signer: string; signature: string }): string | undefined {
    let recovered: string;
    try {
      recovered = recoverSafeSigner(this.ctx.chainId, this.deps.safeAddress, s.digest, s.signature);
    } catch {
      return "malformed signature";
    }
    if (recovered.toLowerCase() !== s.signer.toLowerCase())
      return "signature is not the signer's SafeMessage signature";
    return undefined;
  }

  /** Checks one submission and adds it; `restoring` skips saving and sending (restore does both at the end). */
  private async accept(body: unknown, restoring: boolean): Promise<JsonResponse> {
    const parsed = parseSubmission(body);
    if (typeof parsed === "string") return bad(parsed);
    const s = canonical(parsed);
    if (typeof s === "string") return bad(s);
    if (this.done.has(s.digest)) {
      // A late word is still a word: a valid signature by a current owner ends its silence.
      const owned = !restoring && this.owners.has(s.signer.toLowerCase()) && !this.verify(s);
      if (owned) this.heard(s.signer);
      if (!owned || !(await this.undone(s.decision, s.digest)))
        return { status: 200, body: { ok: true, digest: s.digest, state: "done" } };
    }
    const wrong = this.verify(s);
    if (wrong) return bad(wrong);
    const notOwner = await this.ownerProblem(s.signer);
    if (notOwner) return notOwner;
    if (!restoring) this.heard(s.signer);
    const conflict = conflictReason(this.pool, s);
    if (conflict) return { status: 409, body: { ok: false, reason: conflict } };
    const fresh = !this.pool.has(s.digest);
    const { added, count } = addSignature(this.pool, s);
    const entry = this.pool.get(s.digest)!;
    if (isClaim(entry) && !this.claimSeen.has(s.digest)) this.claimSeen.set(s.digest, this.ctx.nowMs());
    const at = checkpointOf(s.decision);
    if (fresh && at !== undefined) {
      const clock = this.checkpoints.get(at) ?? { entries: 0 };
      clock.entries++;
      this.checkpoints.set(at, clock);
    }
    const threshold = this.threshold;
    if (added && !restoring) {
      this.persist();
      this.ctx.logger.info("signature", {
        ...describeDecision(s.decision),
        digest: s.digest,
        signer: s.signer,
        signatures: count,
        threshold,
      });
      if (count >= threshold) void this.schedule(s.digest);
      if (s.decision.kind === "fault") this.scheduleJob(s.decision.message.jobId); // a claim may hold or release
    }
    return { status: 200, body: { ok: true, digest: s.digest, signatures: count, threshold, state: "pending" } };
  }

  /**
   * Whether a digest remembered as done is pending on chain again: a reorganisation removed the block that decided
   * it (or the report it overtook came back). "Done" is a memory of the chain as it was; an owner re-posting it is
   * the sign to look again (at the head, at most once a second per digest: a re-post costs one job read). If so, it
   * is forgotten as done and pooled like a fresh signature, so the decision is relayed on the new chain.
   */
  private async undone(d: VerifierDecision, digest: string): Promise<boolean> {
    const now = this.ctx.nowMs();
    if (now - (this.doneCheckedAt.get(digest) ?? -Infinity) < 1_000) return false;
    this.doneCheckedAt.set(digest, now);
    if (this.doneCheckedAt.size > DONE_LIMIT) this.doneCheckedAt.delete(this.doneCheckedAt.keys().next().value!);
    let action: ReturnType<typeof poolAction>;
    try {
      const { job, chainTimeS } = await this.readJob(d.message.jobId);
      action = poolAction(d, job, chainTimeS);
    } catch {
      return false; // unreadable now: still "done"; the next re-post looks again
    }
    if (action === "done") return false;
    this.done.delete(digest);
    this.doneCheckedAt.delete(digest);
    this.ctx.logger.warn("a decided digest is pending on chain again (chain reorganisation): pooled again", {
      ...describeDecision(d),
      digest,
    });
    return true;
  }

  /** A 400/503 answer when `signer` is not a current owner of the verifier Safe (re-read at most once a second). */
  private async ownerProblem(signer: string): Promise<JsonResponse | undefined> {
    const key = signer.toLowerCase();
    if (!this.owners.has(key) && this.ctx.nowMs() - this.ownersReadAt > 1_000) {
      try {
        await this.refreshOwners();
      } catch {
        return { status: 503, body: { ok: false, reason: "cannot read the verifier Safe's owners now; retry" } };
      }
    }
    return this.owners.has(key) ? undefined : bad(`${signer} is not an owner of the verifier Safe`);
  }

  /** A verifier's signed "checked: not reproduced" answer to a pending claim (kept in memory; re-posted). */
  private async acceptCheck(body: unknown): Promise<JsonResponse> {
    const c = parseCheck(body);
    if (typeof c === "string") return bad(c);
    const claimDigest = c.message.claimDigest;
    if (this.done.has(claimDigest)) return { status: 200, body: { ok: true, digest: claimDigest, state: "done" } };
    const claim = this.pool.get(claimDigest);
    if (!claim || claim.decision.kind !== "fault") return bad(`no pending claim ${claimDigest}`);
    const m = c.message;
    if (
      checkpointOf({ kind: "fault", message: { ...m, fault: claim.decision.message.fault } }) !==
      checkpointOf(claim.decision)
    )
      return bad("the check is about another checkpoint than the claim");
    const expected = claimCheckDigest(this.domain, m);
    if (expected.toLowerCase() !== c.digest) return bad(`digest does not match the message (expected ${expected})`);
    const wrong = this.signedBy(c);
    if (wrong) return bad(wrong);
    const notOwner = await this.ownerProblem(c.signer);
    if (notOwner) return notOwner;
    this.heard(c.signer);
    const checks = this.notReproduced.get(claimDigest) ?? new Map<string, CheckSubmission>();
    const added = !checks.has(c.signer.toLowerCase());
    checks.set(c.signer.toLowerCase(), c);
    this.notReproduced.set(claimDigest, checks);
    if (added) {
      this.ctx.logger.info("fault claim not reproduced", {
        ...describeDecision(claim.decision),
        digest: claimDigest,
        checkedBy: c.signer,
      });
      this.scheduleJob(m.jobId);
    }
    return { status: 200, body: { ok: true, digest: claimDigest, state: "checked" } };
  }

  /** The claims the hold rule looks at. */
  private claimStates(): ClaimState[] {
    const out: ClaimState[] = [];
    for (const entry of this.pool.values()) {
      if (entry.decision.kind !== "fault") continue;
      const notReproduced = new Set(this.notReproduced.get(entry.digest)?.keys() ?? []);
      out.push({ entry, firstSeenMs: this.claimSeen.get(entry.digest) ?? this.ctx.nowMs(), notReproduced });
    }
    return out;
  }

  private scheduleJob(jobId: bigint): void {
    for (const other of this.pool.values())
      if (other.decision.message.jobId === jobId) void this.schedule(other.digest);
  }

  /**
   * The job at the head (or `below` blocks under it), and that block's time (seconds): a checkpoint past its
   * decision window is stale.
   */
  private async readJob(jobId: bigint, below = 0): Promise<{ job: JobState; chainTimeS?: bigint }> {
    const { escrow, provider } = this.ctx;
    return read(this.ctx, `job ${jobId}`, async () => {
      const at = below === 0 ? "latest" : confirmedBlock(await provider.getBlockNumber(), below);
      if (at !== "latest" && at < 0) return { job: await readJob(escrow, jobId, 0) };
      const block = await provider.getBlock(at);
      if (!block) return { job: await readJob(escrow, jobId, await provider.getBlockNumber()) };
      return { job: await readJob(escrow, jobId, block.number), chainTimeS: BigInt(block.timestamp) };
    });
  }

  /**
   * issue 22: whether a decision the head shows done is still to do at the block `depth` below it (its
   * transaction can still be removed by a reorganisation): such an entry stays in the pool. Never at depth 0.
   */
  private async doneButUnconfirmed(decision: VerifierDecision): Promise<boolean> {
    const depth = confirmationsFor(this.ctx.chainId, this.config.confirmations);
    if (depth === 0) return false;
    const c = await this.readJob(decision.message.jobId, depth);
    return poolAction(decision, c.job, c.chainTimeS) === "keep";
  }

  private drop(digest: string): void {
    this.remove(digest, true);
    this.persist();
  }

  private forget(digest: string): void {
    this.remove(digest, false);
    this.persist();
  }

  /**
   * Takes `digest` out of the pool and forgets what was known about it (`remember`: answer "done" when it is
   * re-sent). When the last entry of a checkpoint goes, so does its clock, and a checkpoint the collector saw
   * pending counts as decided (for the silence rule).
   */
  private remove(digest: string, remember: boolean): void {
    const entry = this.pool.get(digest);
    this.pool.delete(digest);
    if (remember) {
      this.done.add(digest);
      if (this.done.size > DONE_LIMIT) this.done.delete(this.done.values().next().value!);
    }
    this.retryAfter.delete(digest);
    this.claimSeen.delete(digest);
    this.readySince.delete(digest);
    this.notReproduced.delete(digest);
    this.quiet.forget(digest);
    if (!entry) return;
    const at = checkpointOf(entry.decision);
    const clock = at === undefined ? undefined : this.checkpoints.get(at);
    if (!clock || --clock.entries > 0) return;
    if (remember && clock.pendingSeen) this.decided++;
    this.checkpoints.delete(at!);
  }

  /** Queues `digest` behind its job's other decisions (one queue per job; jobs run concurrently). */
  private schedule(digest: string): Promise<ProcessResult> {
    const entry = this.pool.get(digest);
    if (!entry) return Promise.resolve("dropped");
    const key = entry.decision.message.jobId.toString();
    const run = (this.jobQueues.get(key) ?? Promise.resolve()).then(() =>
      this.process(digest).catch((err) => {
        this.ctx.logger.warn("could not process decision; the next tick retries", {
          digest,
          error: (err as Error)?.message,
        });
        return "kept" as ProcessResult;
      }),
    );
    this.jobQueues.set(key, run);
    void run.finally(() => {
      if (this.jobQueues.get(key) === run) this.jobQueues.delete(key);
    });
    return run;
  }

  /** Decides and (maybe) sends one digest's decision. Runs inside its job's queue; one in flight per digest. */
  private async process(digest: string): Promise<ProcessResult> {
    const entry = this.pool.get(digest);
    if (!entry) return "dropped";
    if (this.inFlight.has(digest)) return "busy";
    if ((this.retryAfter.get(digest) ?? -Infinity) > this.ctx.nowMs()) return "kept";
    const sigs = readySignatures(entry, this.owners, this.threshold);
    if (!sigs) return "waiting";
    this.inFlight.add(digest);
    try {
      return await this.decideAndSend(entry, sigs);
    } finally {
      this.inFlight.delete(digest);
    }
  }

  private async decideAndSend(entry: Pending, sigs: { signer: string; signature: string }[]): Promise<ProcessResult> {
    const { digest, decision } = entry;
    const l = this.ctx.logger.child({ ...describeDecision(decision), digest });
    const { job, chainTimeS } = await this.readJob(decision.message.jobId);
    const now = this.ctx.nowMs();
    const at = checkpointOf(decision);
    const clock = at === undefined ? undefined : this.checkpoints.get(at);
    const step = nextStep(decision, {
      job,
      chainTimeS,
      pool: this.pool,
      claims: this.claimStates(),
      owners: this.owners,
      threshold: this.threshold,
      nowMs: now,
      holdMs: this.config.claimHoldMs ?? DEFAULT_CLAIM_HOLD_MS,
      // The checkpoint's hold clock: from the first plain decision on it with its threshold (or its first claim).
      holdSinceMs: clock?.sinceMs ?? (clock && decision.kind === "checkpoint" ? now : undefined),
      quorumWaitMs: this.config.quorumWaitMs ?? 0,
      readySinceMs: this.readySince.get(digest) ?? now,
      silent: this.silentOwners(),
    });
    if (step.action === "drop" && step.remember && (await this.doneButUnconfirmed(decision))) {
      if (this.quiet.changed(digest, "on chain, unconfirmed"))
        l.info("on chain at the head; kept until it is confirmed", { reason: step.reason });
      return "waiting";
    }
    if (step.action === "drop") {
      l.info("already on chain or overtaken; dropped", { reason: step.reason });
      if (step.remember) this.drop(digest);
      else this.forget(digest); // e.g. lapsed: the same report may come again, and its signatures with it
      return "dropped";
    }
    if (step.action === "wait" && step.on === "chain") {
      if (this.quiet.changed(digest, step.reason)) l.info("signed, waiting for the chain", { reason: step.reason });
      return "waiting";
    }
    // Applicable now: the checkpoint was seen pending, and its clocks start.
    this.sawPending(decision);
    if (!this.readySince.has(digest)) this.readySince.set(digest, now);
    if (clock && decision.kind === "checkpoint") clock.sinceMs ??= now;
    if (step.action === "wait" && step.on === "claim") {
      if (this.quiet.changed(digest, step.reason))
        l.info("held: a fault claim on this checkpoint", { reason: step.reason });
      return "waiting";
    }
    if (step.action === "wait") {
      if (this.quiet.changed(digest, "silent")) l.info("held: an owner has not spoken yet", { reason: step.reason });
      return "waiting";
    }
    // A decision moves money: it goes out only when the state `depth` blocks below the head calls for it too
    // (sdk/confirmations.ts), so a report in a block that may still be replaced is not paid for yet.
    const depth = confirmationsFor(this.ctx.chainId, this.config.confirmations);
    if (depth > 0) {
      const c = await this.readJob(decision.message.jobId, depth);
      if (applicability(decision, c.job, c.chainTimeS).action !== "send") {
        if (this.quiet.changed(digest, "confirmations"))
          l.info("applicable at the head; waiting for confirmations", { confirmations: depth });
        return "waiting";
      }
    }
    if (this.config.dryRun && !this.quiet.changed(digest, "dry-run")) return "kept";
    const call = decisionCall(decision, packSafeSignatures(sigs));
    l.info("decision", { reason: step.reason, signers: sigs.map((s) => s.signer) });
    const outcome = this.deps.executor ? await this.deps.executor.execute(call, l) : await execute(this.ctx, call, l);
    if (outcome.kind === "confirmed" || outcome.kind === "race") {
      // Kept (signatures and all) until the decision is `depth` blocks deep: a reorganisation that removes it
      // leaves the checkpoint pending again, and then the same decision goes out again (issue 22).
      if (depth === 0) this.drop(digest);
      // The job moved on: its other decisions (e.g. the verdict after the final acceptance) may apply now.
      this.scheduleJob(decision.message.jobId);
      return "sent";
    }
    if (outcome.kind === "failed") this.retryAfter.set(digest, this.ctx.nowMs() + 30_000);
    return "kept";
  }
}

export function createCollector(ctx: KeeperContext, config: CollectorOptions, deps: CollectorDeps): Collector {
  return new Collector(ctx, config, deps);
}

/**
 * The submission with its signature in the one form the escrow takes (r, low s, v = 27 or 28): ethers also
 * recovers v = 0/1 or EIP-155 style v, which the escrow's ECDSA check refuses and the Safe reads as another
 * signature type, so a malicious owner's co-signature in that form would make every decision it is packed into
 * revert. Re-encoding it keeps its signer and makes it valid on chain.
 */
function canonical(s: Submission): Submission | string {
  try {
    return { ...s, signature: Signature.from(s.signature).serialized };
  } catch {
    return "malformed signature";
  }
}

function bad(reason: string): JsonResponse {
  return { status: 400, body: { ok: false, reason } };
}

function byJobThenStep(a: { decision: VerifierDecision }, b: { decision: VerifierDecision }): number {
  const ja = a.decision.message.jobId;
  const jb = b.decision.message.jobId;
  if (ja !== jb) return ja < jb ? -1 : 1;
  // Per step, fault refusals before plain decisions: the chain takes the first that reaches the threshold.
  const rank = (d: VerifierDecision) =>
    d.kind === "verdict" ? Number.MAX_SAFE_INTEGER : 2 * d.message.step + (d.kind === "fault" ? 0 : 1);
  return rank(a.decision) - rank(b.decision);
}

/** Restores saved signatures, serves `POST /signatures` and ticks until `signal` fires (or once). */
/** The collector's HTTP endpoints (verifiers post and read claims; dashboards read /pending), on host:port. */
export function serveCollector(collector: Collector, host: string, port: number, logger: KeeperContext["logger"]) {
  return startJsonServer({
    host,
    port,
    logger,
    routes: {
      "POST /signatures": collector.submit,
      "POST /claims": collector.submitClaim,
      "GET /claims": collector.listClaims,
      "GET /health": () => ({ status: 200, body: { ok: true, pending: collector.pool.size } }),
      "GET /pending": () => pendingView(collector.pool), // read-only, for dashboards
    },
  });
}

export async function runCollector(
  ctx: KeeperContext,
  config: CollectorConfig,
  deps: CollectorDeps,
  signal: AbortSignal,
): Promise<number> {
  const collector = createCollector(ctx, config, deps);
  await collector.restore();
  const server = await serveCollector(collector, config.host, config.port, ctx.logger);
  try {
    return await runTicks("collector", ctx, config, async () => void (await collector.tick()), signal);
  } finally {
    await server.close();
    await collector.idle();
  }
}
