/**
 * The verdict collector: receives verifiers' signatures (`POST /signatures`), checks each one (signer is a current
 * owner of the verifier Safe; the digest is the escrow's digest of the message; the signature is the signer's
 * SafeMessage signature over it), groups them by digest and, as soon as `threshold` owners signed the same
 * digest, relays acceptCheckpoint / refuseCheckpoint / submitVerdict with the packed signatures.
 *
 * One in-flight transaction per digest, one queue per job (decisions of different jobs proceed concurrently).
 * Before sending, the job's state is read again: a decision already on chain, or overtaken, is dropped, never sent
 * twice. Pending signatures are saved to `--state-file` after every change.
 */
import { AbiCoder, Contract, verifyTypedData } from "ethers";
import { JOB_STATUS } from "../../sdk/contracts.ts";
import {
  checkpointDecisionDigest,
  escrowDomain,
  packSafeSignatures,
  verdictDigest,
} from "../../sdk/verifierSignatures.ts";
import { changeLogger, execute, read, type Call, type KeeperContext, type Outcome } from "../chain.ts";
import type { JsonResponse } from "../http.ts";
import type { CollectorConfig } from "./config.ts";
import {
  addSignature,
  applicability,
  decisionCall,
  describeDecision,
  parseSubmission,
  readySignatures,
  type Decision,
  type JobState,
  type Pool,
  type Submission,
} from "./decide.ts";
import { loadSubmissions, savePool, type StoreIdentity } from "./store.ts";

/** The two Safe views the collector needs (SafeL2 v1.4.1). */
export const SAFE_ABI = [
  "function getOwners() view returns (address[])",
  "function getThreshold() view returns (uint256)",
];

const SAFE_MESSAGE_TYPES = { SafeMessage: [{ name: "message", type: "bytes" }] };

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

export function createCollector(ctx: KeeperContext, config: Pick<CollectorConfig, "stateFile" | "dryRun">, deps: CollectorDeps) {
  const log = ctx.logger;
  const safe = new Contract(deps.safeAddress, SAFE_ABI, ctx.provider);
  const domain = escrowDomain(ctx.chainId, deps.escrowAddress);
  const identity: StoreIdentity = { chainId: ctx.chainId.toString(), escrow: deps.escrowAddress, safe: deps.safeAddress };
  const pool: Pool = new Map();
  const done = new Set<string>();
  const inFlight = new Set<string>();
  const retryAfter = new Map<string, number>();
  const jobQueues = new Map<string, Promise<unknown>>();
  const quiet = changeLogger();
  let owners = new Set<string>();
  let threshold = 0;
  let ownersReadAt = -Infinity;

  const persist = () => savePool(config.stateFile, identity, pool);

  async function refreshOwners(): Promise<void> {
    const [list, t] = await read(ctx, "safe owners", () => Promise.all([safe.getOwners(), safe.getThreshold()]));
    owners = new Set((list as string[]).map((o) => o.toLowerCase()));
    threshold = Number(t);
    ownersReadAt = ctx.nowMs();
  }

  /** Why the submission's digest or signature is wrong, or undefined. */
  function verify(s: Submission): string | undefined {
    const expected =
      s.decision.kind === "checkpoint"
        ? checkpointDecisionDigest(domain, s.decision.message)
        : verdictDigest(domain, s.decision.message);
    if (expected.toLowerCase() !== s.digest) return `digest does not match the message (expected ${expected})`;
    let recovered: string;
    try {
      const message = AbiCoder.defaultAbiCoder().encode(["bytes32"], [s.digest]);
      recovered = verifyTypedData({ chainId: ctx.chainId, verifyingContract: deps.safeAddress }, SAFE_MESSAGE_TYPES, { message }, s.signature);
    } catch {
      return "malformed signature";
    }
    if (recovered.toLowerCase() !== s.signer.toLowerCase()) return "signature is not the signer's SafeMessage signature";
    return undefined;
  }

  /** Checks one submission and adds it; `restoring` skips saving and sending (restore does both at the end). */
  async function accept(body: unknown, restoring = false): Promise<JsonResponse> {
    const s = parseSubmission(body);
    if (typeof s === "string") return bad(s);
    if (done.has(s.digest)) return { status: 200, body: { ok: true, digest: s.digest, state: "done" } };
    const wrong = verify(s);
    if (wrong) return bad(wrong);
    if (!owners.has(s.signer.toLowerCase()) && ctx.nowMs() - ownersReadAt > 1_000) {
      try {
        await refreshOwners();
      } catch {
        return { status: 503, body: { ok: false, reason: "cannot read the verifier Safe's owners now; retry" } };
      }
    }
    if (!owners.has(s.signer.toLowerCase())) return bad(`${s.signer} is not an owner of the verifier Safe`);
    const { added, count } = addSignature(pool, s);
    if (added && !restoring) {
      persist();
      log.info("signature", { ...describeDecision(s.decision), digest: s.digest, signer: s.signer, signatures: count, threshold });
      if (count >= threshold) void schedule(s.digest);
    }
    return { status: 200, body: { ok: true, digest: s.digest, signatures: count, threshold, state: "pending" } };
  }

  async function readJob(jobId: bigint): Promise<JobState> {
    return read(ctx, `job ${jobId}`, async () => {
      const blockTag = await ctx.provider.getBlockNumber();
      const [status, job] = await Promise.all([ctx.escrow.statusOf(jobId, { blockTag }), ctx.escrow.jobOf(jobId, { blockTag })]);
      return {
        status: JOB_STATUS[Number(status)],
        epoch: job.epoch,
        totalSteps: Number(job.totalSteps),
        acceptedStep: Number(job.acceptedStep),
        acceptedHash: job.acceptedHash,
        pendingStep: Number(job.pendingStep),
        pendingHash: job.pendingHash,
      };
    });
  }

  function drop(digest: string): void {
    pool.delete(digest);
    done.add(digest);
    retryAfter.delete(digest);
    quiet.forget(digest);
    persist();
  }

  /** Decides and (maybe) sends one digest's decision. Runs inside its job's queue. */
  async function processDigest(digest: string): Promise<ProcessResult> {
    const entry = pool.get(digest);
    if (!entry) return "dropped";
    if (inFlight.has(digest)) return "busy";
    if ((retryAfter.get(digest) ?? -Infinity) > ctx.nowMs()) return "kept";
    const sigs = readySignatures(entry, owners, threshold);
    if (!sigs) return "waiting";
    inFlight.add(digest);
    try {
      const l = log.child({ ...describeDecision(entry.decision), digest });
      const job = await readJob(entry.decision.message.jobId);
      const a = applicability(entry.decision, job);
      if (a.action === "stale") {
        l.info("already on chain or overtaken; dropped", { reason: a.reason });
        drop(digest);
        return "dropped";
      }
      if (a.action === "wait") {
        if (quiet.changed(digest, a.reason)) l.info("signed, waiting for the chain", { reason: a.reason });
        return "waiting";
      }
      if (config.dryRun && !quiet.changed(digest, "dry-run")) return "kept";
      const call = decisionCall(entry.decision, packSafeSignatures(sigs));
      l.info("decision", { reason: a.reason, signers: sigs.map((s) => s.signer) });
      const outcome = deps.executor ? await deps.executor.execute(call, l) : await execute(ctx, call, l);
      if (outcome.kind === "confirmed" || outcome.kind === "race") {
        drop(digest);
        // The job moved on: its other decisions (e.g. the verdict after the final acceptance) may apply now.
        for (const other of pool.values()) {
          if (other.decision.message.jobId === entry.decision.message.jobId) void schedule(other.digest);
        }
        return "sent";
      }
      if (outcome.kind === "failed") retryAfter.set(digest, ctx.nowMs() + 30_000);
      return "kept";
    } finally {
      inFlight.delete(digest);
    }
  }

  /** Queues `digest` behind its job's other decisions. */
  function schedule(digest: string): Promise<ProcessResult> {
    const entry = pool.get(digest);
    if (!entry) return Promise.resolve("dropped");
    const key = entry.decision.message.jobId.toString();
    const run = (jobQueues.get(key) ?? Promise.resolve()).then(() =>
      processDigest(digest).catch((err) => {
        log.warn("could not process decision; the next tick retries", { digest, error: (err as Error)?.message });
        return "kept" as ProcessResult;
      }),
    );
    jobQueues.set(key, run);
    void run.finally(() => {
      if (jobQueues.get(key) === run) jobQueues.delete(key);
    });
    return run;
  }

  /** Re-reads the Safe's owners and threshold, then processes every pending digest (checkpoints before verdicts). */
  async function tick(): Promise<ProcessResult[]> {
    await refreshOwners();
    const order = [...pool.values()].sort(byJobThenStep);
    return Promise.all(order.map((p) => schedule(p.digest)));
  }

  /** Loads the saved signatures (re-checked like fresh ones); returns how many were restored. */
  async function restore(): Promise<number> {
    await refreshOwners();
    const bodies = loadSubmissions(config.stateFile, identity, (why) => log.warn("ignoring state file", { file: config.stateFile, why }));
    let restored = 0;
    for (const body of bodies) {
      const r = await accept(body, true);
      if (r.status === 200) restored++;
      else log.warn("dropping a saved signature", { reason: (r.body as { reason: string }).reason });
    }
    if (bodies.length > 0) {
      persist();
      log.info("restored pending signatures", { file: config.stateFile, signatures: restored, decisions: pool.size });
    }
    return restored;
  }

  /** Resolves when no decision is being processed. */
  async function idle(): Promise<void> {
    while (jobQueues.size > 0) await Promise.all([...jobQueues.values()]);
  }

  return {
    pool,
    submit: (body: unknown) => accept(body),
    tick,
    restore,
    idle,
    threshold: () => threshold,
  };
}

function bad(reason: string): JsonResponse {
  return { status: 400, body: { ok: false, reason } };
}

function byJobThenStep(a: { decision: Decision }, b: { decision: Decision }): number {
  const ja = a.decision.message.jobId;
  const jb = b.decision.message.jobId;
  if (ja !== jb) return ja < jb ? -1 : 1;
  const sa = a.decision.kind === "checkpoint" ? a.decision.message.step : Number.MAX_SAFE_INTEGER;
  const sb = b.decision.kind === "checkpoint" ? b.decision.message.step : Number.MAX_SAFE_INTEGER;
  return sa - sb;
}
