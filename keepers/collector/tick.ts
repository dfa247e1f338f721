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
 * `claimHoldMs` per claim); the other verifiers' signed "not reproduced" checks are kept in memory only: they
 * re-post them every tick, and until they do the hold simply holds again.
 */
import { Contract } from "ethers";
import { readJob } from "../../sdk/job.ts";
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
  decisionCall,
  describeDecision,
  holdReason,
  parseCheck,
  silenceReason,
  parseSubmission,
  readySignatures,
  type CheckSubmission,
  type ClaimState,
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

type CollectorOptions = Pick<CollectorConfig, "stateFile" | "dryRun"> & { claimHoldMs?: number; quorumWaitMs?: number };

/** The longest a claim holds a plain decision on its checkpoint when the other verifiers do not answer it. */
export const DEFAULT_CLAIM_HOLD_MS = 120_000;

export class Collector {
  /** Pending decisions by digest. */
  readonly pool: Pool = new Map();
  private readonly ctx: KeeperContext;
  private readonly config: CollectorOptions;
  private readonly deps: CollectorDeps;
  private readonly safe: Contract;
  private readonly domain: ReturnType<typeof escrowDomain>;
  private readonly identity: StoreIdentity;
  /** Digests decided on chain or overtaken: answered "done", never stored again. */
  private readonly done = new Set<string>();
  private readonly inFlight = new Set<string>();
  private readonly retryAfter = new Map<string, number>();
  private readonly jobQueues = new Map<string, Promise<unknown>>();
  private readonly quiet = changeLogger();
  private owners = new Set<string>();
  private threshold = 0;
  private ownersReadAt = -Infinity;
  /** Per fault digest: when first seen (since this start), and the owners' "not reproduced" checks. */
  private readonly claimSeen = new Map<string, number>();
  /** When each digest was first seen with its threshold (since this start). */
  private readonly readySince = new Map<string, number>();
  private readonly notReproduced = new Map<string, Map<string, CheckSubmission>>();

  constructor(ctx: KeeperContext, config: CollectorOptions, deps: CollectorDeps) {
    this.ctx = ctx;
    this.config = config;
    this.deps = deps;
    this.safe = new Contract(deps.safeAddress, SAFE_ABI, ctx.provider);
    this.domain = escrowDomain(ctx.chainId, deps.escrowAddress);
    this.identity = { chainId: ctx.chainId.toString(), escrow: deps.escrowAddress, safe: deps.safeAddress };
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
      if (p.decision.kind !== "fault") continue;
      const finder = p.signatures.get(p.decision.message.fault.finder.toLowerCase());
      if (!finder) continue; // a confirmation that arrived before its claim (e.g. after a restart)
      const m = p.decision.message;
      const message = { ...m, jobId: m.jobId.toString(), epoch: m.epoch.toString(), fault: { ...m.fault } };
      claims.push({ kind: "fault", message, digest: p.digest, signer: finder.signer, signature: finder.signature });
    }
    return { status: 200, body: { claims } };
  };

  /** Re-reads the Safe's owners and threshold, then processes every pending digest (checkpoints before verdicts). */
  async tick(): Promise<ProcessResult[]> {
    await this.refreshOwners();
    const order = [...this.pool.values()].sort(byJobThenStep);
    return Promise.all(order.map((p) => this.schedule(p.digest)));
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
    const s = parseSubmission(body);
    if (typeof s === "string") return bad(s);
    if (this.done.has(s.digest)) return { status: 200, body: { ok: true, digest: s.digest, state: "done" } };
    const wrong = this.verify(s);
    if (wrong) return bad(wrong);
    const notOwner = await this.ownerProblem(s.signer);
    if (notOwner) return notOwner;
    const second = this.secondClaim(s);
    if (second) return { status: 409, body: { ok: false, reason: second } };
    const { added, count } = addSignature(this.pool, s);
    if (s.decision.kind === "fault" && !this.claimSeen.has(s.digest)) this.claimSeen.set(s.digest, this.ctx.nowMs());
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

  /** One claim per finder per checkpoint, so a malicious verifier cannot hold a checkpoint with many claims. */
  private secondClaim(s: Submission): string | undefined {
    const d = s.decision;
    if (d.kind !== "fault" || d.message.fault.finder.toLowerCase() !== s.signer.toLowerCase()) return undefined;
    const at = checkpointOf(d);
    for (const p of this.pool.values()) {
      const o = p.decision;
      if (p.digest === s.digest || o.kind !== "fault" || checkpointOf(o) !== at) continue;
      if (o.message.fault.finder.toLowerCase() === s.signer.toLowerCase())
        return `${s.signer} already claimed a fault on this checkpoint (${p.digest})`;
    }
    return undefined;
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

  private async readJob(jobId: bigint): Promise<JobState> {
    const { escrow, provider } = this.ctx;
    return read(this.ctx, `job ${jobId}`, async () => readJob(escrow, jobId, await provider.getBlockNumber()));
  }

  private drop(digest: string): void {
    this.pool.delete(digest);
    this.done.add(digest);
    this.retryAfter.delete(digest);
    this.claimSeen.delete(digest);
    this.readySince.delete(digest);
    this.notReproduced.delete(digest);
    this.quiet.forget(digest);
    this.persist();
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
    const a = applicability(decision, await this.readJob(decision.message.jobId));
    if (a.action === "stale") {
      l.info("already on chain or overtaken; dropped", { reason: a.reason });
      this.drop(digest);
      return "dropped";
    }
    if (a.action === "wait") {
      if (this.quiet.changed(digest, a.reason)) l.info("signed, waiting for the chain", { reason: a.reason });
      return "waiting";
    }
    const holdMs = this.config.claimHoldMs ?? DEFAULT_CLAIM_HOLD_MS;
    const hold = holdReason(decision, this.claimStates(), this.owners, this.threshold, this.ctx.nowMs(), holdMs);
    if (hold) {
      if (this.quiet.changed(digest, hold)) l.info("held: a fault claim on this checkpoint", { reason: hold });
      return "waiting";
    }
    const now = this.ctx.nowMs();
    if (!this.readySince.has(digest)) this.readySince.set(digest, now);
    const waitMs = this.config.quorumWaitMs ?? 0;
    const silent = silenceReason(decision, this.pool, this.owners, this.readySince.get(digest)!, now, waitMs);
    if (silent) {
      if (this.quiet.changed(digest, "silent")) l.info("held: an owner has not spoken yet", { reason: silent });
      return "waiting";
    }
    if (this.config.dryRun && !this.quiet.changed(digest, "dry-run")) return "kept";
    const call = decisionCall(decision, packSafeSignatures(sigs));
    l.info("decision", { reason: a.reason, signers: sigs.map((s) => s.signer) });
    const outcome = this.deps.executor ? await this.deps.executor.execute(call, l) : await execute(this.ctx, call, l);
    if (outcome.kind === "confirmed" || outcome.kind === "race") {
      this.drop(digest);
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
export async function runCollector(
  ctx: KeeperContext,
  config: CollectorConfig,
  deps: CollectorDeps,
  signal: AbortSignal,
): Promise<number> {
  const collector = createCollector(ctx, config, deps);
  await collector.restore();
  const server = await startJsonServer({
    host: config.host,
    port: config.port,
    logger: ctx.logger,
    routes: {
      "POST /signatures": collector.submit,
      "POST /claims": collector.submitClaim,
      "GET /claims": collector.listClaims,
      "GET /health": () => ({ status: 200, body: { ok: true, pending: collector.pool.size } }),
      "GET /pending": () => pendingView(collector.pool), // read-only, for dashboards
    },
  });
  try {
    return await runTicks("collector", ctx, config, async () => void (await collector.tick()), signal);
  } finally {
    await server.close();
    await collector.idle();
  }
}
