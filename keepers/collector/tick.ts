/**
 * The verdict collector's I/O: receives verifiers' signatures (`POST /signatures`, `POST /claims`), checks each
 * digest and signature (the escrow's digest of the message; the signer's SafeMessage signature over it), and hands
 * it to the pool (pool.ts: one value, pure transitions), which groups them by digest and answers 200 / 400 / 409
 * from what it holds — no chain read while a POST is handled. As soon as `threshold` owners signed the same digest,
 * it relays acceptCheckpoint / refuseCheckpoint / refuseWithFault / submitVerdict with the packed signatures.
 *
 * This file reads the chain (the Safe's owners each tick; the pooled jobs each tick, pool.ts observe; one job
 * again right before a decision, pool.ts check), sends transactions and writes the state file; the rules are in
 * pool.ts and decide.ts. One in-flight transaction per digest, one queue per job (decisions of different jobs
 * proceed concurrently). Before sending, the job's state is read again: a decision already on chain, or overtaken,
 * is dropped, never sent twice. Pending signatures are saved to `--state-file` after every change.
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
 * Owners are those of the last tick: a signer added to the Safe since is refused (400) until the next tick reads
 * them (verifiers re-post); before the first read (no tick, no restore yet) signatures are pooled and checked then.
 *
 * Reorganisations: the pool is judged against the chain's state each tick, so it follows the new chain by
 * itself; the one memory of the old chain is the set of digests decided ("done"). A re-post of such a digest a
 * second or more after the chain last showed it decided is pooled again and judged like a fresh signature: pending
 * again (its deciding block was replaced) → relayed again; still decided → dropped and "done" again.
 */
import { Contract, Signature } from "ethers";
import { confirmationsFor, confirmedBlock } from "../../sdk/node/confirmations.ts";
import { readJob } from "../../sdk/node/jobReads.ts";
import { SAFE_ABI } from "../../sdk/node/safeOwners.ts";
import {
  checkpointDecisionDigest,
  claimCheckDigest,
  escrowDomain,
  faultRefusalDigest,
  recoverSafeSigner,
  verdictDigest,
} from "../../sdk/rules/verifierSignatures.ts";
import { changeLogger, execute, read, type Call, type KeeperContext, type Outcome } from "../chain.ts";
import { startJsonServer, type JsonResponse } from "../http.ts";
import { runTicks } from "../keeper.ts";
import { pendingView } from "./pendingView.ts";
import type { CollectorConfig } from "./config.ts";
import {
  describeDecision,
  parseCheck,
  parseSubmission,
  SILENCE_DEFAULTS,
  type SilenceRule,
  type VerifierDecision,
  type Pending,
  type Pool,
  type Submission,
} from "./decide.ts";
import {
  accept,
  acceptCheck,
  check,
  claimsView,
  emptyPool,
  observe,
  pooledJobs,
  sendFailed,
  settled,
  silentNow,
  wantsConfirmed,
  type Check,
  type JobAt,
  type PoolRules,
  type PoolState,
} from "./pool.ts";
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

export class Collector {
  /** The pool: one value (pool.ts), replaced by each pure transition. */
  private state: PoolState;
  private readonly ctx: KeeperContext;
  private readonly config: CollectorOptions;
  private readonly deps: CollectorDeps;
  private readonly safe: Contract;
  private readonly domain: ReturnType<typeof escrowDomain>;
  private readonly identity: StoreIdentity;
  private readonly rules: PoolRules;
  /** Digests being sent (one in flight per digest), and one queue per job (jobs run concurrently). */
  private readonly inFlight = new Set<string>();
  private readonly jobQueues = new Map<string, Promise<unknown>>();
  private readonly quiet = changeLogger();

  constructor(ctx: KeeperContext, config: CollectorOptions, deps: CollectorDeps) {
    this.ctx = ctx;
    this.config = config;
    this.deps = deps;
    this.safe = new Contract(deps.safeAddress, SAFE_ABI, ctx.provider);
    this.domain = escrowDomain(ctx.chainId, deps.escrowAddress);
    this.identity = { chainId: ctx.chainId.toString(), escrow: deps.escrowAddress, safe: deps.safeAddress };
    this.rules = {
      holdMs: config.claimHoldMs ?? DEFAULT_CLAIM_HOLD_MS,
      quorumWaitMs: config.quorumWaitMs ?? 0,
      silence: { ...SILENCE_DEFAULTS, ...config.silence },
      depth: confirmationsFor(ctx.chainId, config.confirmations),
    };
    this.state = emptyPool(ctx.nowMs());
  }

  /** Pending decisions by digest (read-only: the pool's current value). */
  get pool(): Pool {
    return this.state.entries;
  }

  /** The HTTP handler for `POST /signatures`. */
  readonly submit = (body: unknown): Promise<JsonResponse> => Promise.resolve(this.accept(body, false));

  /** The HTTP handler for `POST /claims`: a claim or its confirmation (a fault refusal), or a "not reproduced". */
  readonly submitClaim = (body: unknown): Promise<JsonResponse> => {
    const kind = (body as { kind?: unknown } | undefined)?.kind;
    if (kind === "check") return Promise.resolve(this.acceptCheck(body));
    if (kind !== "fault") return Promise.resolve(bad('kind must be "fault" or "check"'));
    return Promise.resolve(this.accept(body, false));
  };

  /** The HTTP handler for `GET /claims`: every pending claim, signed by its finder. */
  readonly listClaims = (): JsonResponse => ({ status: 200, body: claimsView(this.state) });

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
    const order = [...this.state.entries.values()].sort(byJobThenStep);
    return Promise.all(order.map((p) => this.schedule(p.digest)));
  }

  /** The owners silent now (decide.ts isSilent), lower-case. */
  silentOwners(): Set<string> {
    return silentNow(this.state, this.ctx.nowMs(), this.rules.silence);
  }

  /**
   * Reads what the pool's jobs look like on chain (at one block: the job count, then one read per existing job,
   * and, for one whose entries the head shows done, the block `depth` below) and lets the pool drop what is not
   * pending (pool.ts observe). Entries being sent are left to their send.
   */
  private async prune(): Promise<void> {
    const jobIds = pooledJobs(this.state, this.inFlight);
    if (jobIds.length === 0) return;
    const { escrow, provider } = this.ctx;
    const block = await read(this.ctx, "head", () => provider.getBlock("latest"));
    if (!block) return;
    const chainTimeS = BigInt(block.timestamp);
    const jobCount = await read(this.ctx, "job count", () => escrow.jobCount({ blockTag: block.number }));
    const jobs = new Map<bigint, { head?: JobAt; confirmed?: JobAt }>();
    await Promise.all(
      jobIds
        .filter((jobId) => jobId <= jobCount)
        .map(async (jobId) => {
          let head: JobAt;
          try {
            head = {
              job: await read(this.ctx, `job ${jobId}`, () => readJob(escrow, jobId, block.number)),
              chainTimeS,
            };
          } catch {
            return; // unreadable now: kept, the next tick tries again
          }
          const confirmed = wantsConfirmed(this.state, jobId, head, this.rules)
            ? await this.readJob(jobId, this.rules.depth).catch(() => undefined)
            : undefined;
          jobs.set(jobId, { head, confirmed });
        }),
    );
    const seen = observe(
      this.state,
      { jobCount, jobs },
      { nowMs: this.ctx.nowMs(), depth: this.rules.depth, skip: this.inFlight },
    );
    this.state = seen.state;
    this.reportPendingAgain(seen.pendingAgain);
    const noJob = new Map<bigint, number>();
    for (const { entry, why } of seen.dropped) {
      this.quiet.forget(entry.digest);
      if (why === "no job") {
        const jobId = entry.decision.message.jobId;
        noJob.set(jobId, (noJob.get(jobId) ?? 0) + 1);
        continue;
      }
      this.ctx.logger.info(why === "done" ? "no longer pending on chain; dropped" : "not pending now; dropped", {
        ...describeDecision(entry.decision),
        digest: entry.digest,
        signers: entry.signatures.size,
      });
    }
    for (const [job, entries] of noJob) this.ctx.logger.info("no such job; dropped", { job, entries });
    if (seen.dropped.length > 0) this.persist();
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
      const r = this.accept(body, true);
      if (r.status === 200) restored++;
      else this.ctx.logger.warn("dropping a saved signature", { reason: (r.body as { reason: string }).reason });
    }
    if (bodies.length > 0) {
      this.persist();
      this.ctx.logger.info("restored pending signatures", {
        file: stateFile,
        signatures: restored,
        decisions: this.state.entries.size,
      });
    }
    return restored;
  }

  /** Resolves when no decision is being processed. */
  async idle(): Promise<void> {
    while (this.jobQueues.size > 0) await Promise.all([...this.jobQueues.values()]);
  }

  private persist(): void {
    savePool(this.config.stateFile, this.identity, this.state.entries);
  }

  private async refreshOwners(): Promise<void> {
    const [list, t] = await read(this.ctx, "safe owners", () =>
      Promise.all([this.safe.getOwners(), this.safe.getThreshold()]),
    );
    const seen = observe(
      this.state,
      { owners: { list: list as string[], threshold: Number(t) } },
      { nowMs: this.ctx.nowMs(), depth: this.rules.depth },
    );
    this.state = seen.state;
    for (const { entry } of seen.dropped) this.quiet.forget(entry.digest);
    if (seen.dropped.length > 0) this.persist();
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

  /**
   * Checks one submission and adds it (pool.ts accept; no chain read); `restoring` skips saving and sending
   * (restore does both at the end).
   */
  private accept(body: unknown, restoring: boolean): JsonResponse {
    const parsed = parseSubmission(body);
    if (typeof parsed === "string") return bad(parsed);
    const s = canonical(parsed);
    if (typeof s === "string") return bad(s);
    const r = accept(this.state, s, { wrong: this.verify(s), nowMs: this.ctx.nowMs(), restoring });
    this.state = r.state;
    if (r.added && !restoring) {
      this.persist();
      this.ctx.logger.info("signature", {
        ...describeDecision(s.decision),
        digest: s.digest,
        signer: s.signer,
        signatures: r.count,
        threshold: this.state.threshold,
      });
    }
    for (const digest of r.kick) void this.schedule(digest);
    if (r.kickJob !== undefined) this.scheduleJob(r.kickJob); // a claim may hold or release
    return r.answer;
  }

  /** A verifier's signed "checked: not reproduced" answer to a pending claim (kept in memory; re-posted). */
  private acceptCheck(body: unknown): JsonResponse {
    const c = parseCheck(body);
    if (typeof c === "string") return bad(c);
    const expected = claimCheckDigest(this.domain, c.message);
    const wrongDigest =
      expected.toLowerCase() !== c.digest ? `digest does not match the message (expected ${expected})` : undefined;
    const r = acceptCheck(this.state, c, { wrongDigest, wrong: this.signedBy(c), nowMs: this.ctx.nowMs() });
    this.state = r.state;
    if (r.added && r.claim) {
      this.ctx.logger.info("fault claim not reproduced", {
        ...describeDecision(r.claim.decision),
        digest: r.claim.digest,
        checkedBy: c.signer,
      });
      this.scheduleJob(c.message.jobId);
    }
    return r.answer;
  }

  private scheduleJob(jobId: bigint): void {
    for (const other of this.state.entries.values())
      if (other.decision.message.jobId === jobId) void this.schedule(other.digest);
  }

  /**
   * The job at the head (or `below` blocks under it), and that block's time (seconds): a checkpoint past its
   * decision window is stale.
   */
  private async readJob(jobId: bigint, below = 0): Promise<JobAt> {
    const { escrow, provider } = this.ctx;
    return read(this.ctx, `job ${jobId}`, async () => {
      const at = below === 0 ? "latest" : confirmedBlock(await provider.getBlockNumber(), below);
      if (at !== "latest" && at < 0) return { job: await readJob(escrow, jobId, 0) };
      const block = await provider.getBlock(at);
      if (!block) return { job: await readJob(escrow, jobId, await provider.getBlockNumber()) };
      return { job: await readJob(escrow, jobId, block.number), chainTimeS: BigInt(block.timestamp) };
    });
  }

  private reportPendingAgain(entries: Pending[]): void {
    for (const p of entries)
      this.ctx.logger.warn("a decided digest is pending on chain again (chain reorganisation): pooled again", {
        ...describeDecision(p.decision),
        digest: p.digest,
      });
  }

  /** Queues `digest` behind its job's other decisions (one queue per job; jobs run concurrently). */
  private schedule(digest: string): Promise<ProcessResult> {
    const entry = this.state.entries.get(digest);
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

  /**
   * Decides and (maybe) sends one digest's decision: reads the facts pool.ts check asks for (the owners, if never
   * read; the job at the head, then maybe `depth` below it), then acts on its answer. Runs inside its job's queue;
   * one in flight per digest.
   */
  private async process(digest: string): Promise<ProcessResult> {
    const entry = this.state.entries.get(digest);
    if (!entry) return "dropped";
    if (this.inFlight.has(digest)) return "busy";
    this.inFlight.add(digest);
    try {
      if (!this.state.ownersSeen) await this.refreshOwners(); // a post before the first tick (no chain read in it)
      return await this.decideAndSend(entry);
    } finally {
      this.inFlight.delete(digest);
    }
  }

  private async decideAndSend(entry: Pending): Promise<ProcessResult> {
    const { digest, decision } = entry;
    const l = this.ctx.logger.child({ ...describeDecision(decision), digest });
    const facts: { head?: JobAt; confirmed?: JobAt } = {};
    let r: ReturnType<typeof check>;
    for (;;) {
      r = check(this.state, digest, this.rules, { nowMs: this.ctx.nowMs(), ...facts });
      this.state = r.state;
      if (r.check.action !== "read") break;
      const at = await this.readJob(decision.message.jobId, r.check.depth);
      if (r.check.depth === 0) facts.head = at;
      else facts.confirmed = at;
    }
    if (r.pendingAgain) this.reportPendingAgain([entry]);
    const c = r.check;
    switch (c.action) {
      case "gone":
        return "dropped";
      case "retry later":
        return "kept";
      case "unsigned":
        return "waiting";
      case "dropped":
        this.quiet.forget(digest);
        l.info("already on chain or overtaken; dropped", { reason: c.reason });
        this.persist(); // remembered as done, or forgotten (e.g. lapsed: the same report may come again)
        return "dropped";
      case "wait":
        if (this.quiet.changed(digest, WAIT_KEYS[c.on] ?? c.reason))
          l.info(WAIT_LOGS[c.on], WAIT_FIELDS[c.on](c, this.rules));
        return "waiting";
    }
    if (this.config.dryRun && !this.quiet.changed(digest, "dry-run")) return "kept";
    l.info("decision", { reason: c.reason, signers: c.signers });
    const outcome = this.deps.executor
      ? await this.deps.executor.execute(c.call, l)
      : await execute(this.ctx, c.call, l);
    if (outcome.kind === "confirmed" || outcome.kind === "race") {
      // Kept (signatures and all) until the decision is `depth` blocks deep: a reorganisation that removes it
      // leaves the checkpoint pending again, and then the same decision goes out again.
      if (this.rules.depth === 0) {
        this.state = settled(this.state, digest, this.ctx.nowMs());
        this.quiet.forget(digest);
        this.persist();
      }
      // The job moved on: its other decisions (e.g. the verdict after the final acceptance) may apply now.
      this.scheduleJob(decision.message.jobId);
      return "sent";
    }
    if (outcome.kind === "failed") this.state = sendFailed(this.state, digest, this.ctx.nowMs());
    return "kept";
  }
}

type WaitOn = Extract<Check, { action: "wait" }>["on"];
/** The quiet log's key per wait (undefined: the reason), its message and fields. */
const WAIT_KEYS: Partial<Record<WaitOn, string>> = {
  unconfirmed: "on chain, unconfirmed",
  owner: "silent",
  confirmations: "confirmations",
};
const WAIT_LOGS: Record<WaitOn, string> = {
  chain: "signed, waiting for the chain",
  claim: "held: a fault claim on this checkpoint",
  owner: "held: an owner has not spoken yet",
  unconfirmed: "on chain at the head; kept until it is confirmed",
  confirmations: "applicable at the head; waiting for confirmations",
};
const WAIT_FIELDS: Record<WaitOn, (c: { reason: string }, rules: PoolRules) => Record<string, unknown>> = {
  chain: (c) => ({ reason: c.reason }),
  claim: (c) => ({ reason: c.reason }),
  owner: (c) => ({ reason: c.reason }),
  unconfirmed: (c) => ({ reason: c.reason }),
  confirmations: (_c, rules) => ({ confirmations: rules.depth }),
};

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
