/**
 * The finalizer keeper: on a node-cron schedule, and at once when a block passes a dispute window's or an arbiter's
 * deadline, rebuilds from the chain which jobs can be settled and which providers have unclaimed earnings
 * (providers from CheckpointAccepted events), and sends settle / claimEarnings.
 *
 * Each run reads (through Multicall3) only the jobs whose status may have changed: named by an escrow event since
 * the last run, created since, or acted on last run. A job whose deadline its own event announced (VerdictSubmitted,
 * DisputeOpened) and that no event touched since is not read when the deadline passes: its status then is derived
 * here exactly as `statusOf` derives it (past the deadline: Settleable / ArbiterTimedOut), so the settles go out in
 * the first run after that block, settles before any earnings read, in Multicall3 batches (batch.ts).
 * Runs never overlap (sdk/run/runner.ts: node-cron's noOverlap plus one guard shared with the deadline watch).
 */
import type { Block, Contract } from "ethers";
import { confirmationsFor, confirmedBlock } from "../../sdk/node/confirmations.ts";
import { isSettleable, statusName, type JobStatusName } from "../../sdk/rules/job.ts";
import { LogCursor } from "../../sdk/node/logRange.ts";
import { batchReader, valueOf } from "../../sdk/node/multicall.ts";
import { nonOverlapping } from "../../sdk/run/runner.ts";
import { sleep } from "../../sdk/run/retry.ts";
import { protocolInterfaces } from "../../sdk/node/contracts.ts";
import { classifyError } from "../../sdk/node/errors.ts";
import { execute, mapLimit, read, type KeeperContext, type Outcome } from "../chain.ts";
import { runTicks } from "../keeper.ts";
import { BATCH_MIN, sendBatched, shouldBatch } from "./batch.ts";
import type { FinalizerConfig } from "./config.ts";
import {
  derivedStatus,
  earningsMatter,
  nothingLeftToDo,
  planFinalizer,
  STALE_HEAD_SLACK_S,
  staleDeadline,
  type FinalizerAction,
  type FinalizerJob,
} from "./decide.ts";
import { eventsFrom } from "../../sdk/node/deployment.ts";

export interface FinalizerTickReport {
  plan: FinalizerAction[][];
  sent: { action: FinalizerAction; outcome: Outcome }[];
  /** Jobs whose status this run read (the others cannot have changed since they were last read). */
  read: bigint[];
  /** Jobs whose status this run derived from a passed deadline instead of reading it. */
  derived: bigint[];
}

type Status = { jobId: bigint; status: JobStatusName };

export function createFinalizer(
  ctx: KeeperContext,
  config: Pick<FinalizerConfig, "fromBlock"> & { confirmations?: number },
) {
  const log = ctx.logger;
  /** Settles and claims move money: decide on the state at head − depth only (sdk/node/confirmations.ts). */
  const depth = confirmationsFor(ctx.chainId, config.confirmations);
  const fromBlock = eventsFrom(config.fromBlock, ctx);
  const escrow = ctx.escrow as unknown as Contract;
  const batch = ctx.batch ?? batchReader(ctx.provider);
  const finished = new Set<bigint>();
  const providersOf = new Map<bigint, Set<string>>();
  /** Chain time after which a job's status may change without an event (dispute window, arbiter timeout). */
  const deadlines = new Map<bigint, bigint>();
  /** The status each job with a deadline had when last read (DisputeWindow or Disputed). */
  const lastStatus = new Map<bigint, JobStatusName>();
  /** Jobs acted on last tick: read again whatever happened to the transactions. */
  let recheck = new Set<bigint>();
  /**
   * Jobs that events already folded (or the job count) named, whose reads have not succeeded yet: a run that failed
   * after its log scan (the node down, or a pruned node refusing the scan's block after a long scan) leaves the
   * cursor past those events, so the next run reads them from here.
   */
  let unread = new Set<bigint>();
  let knownJobCount = 0n;
  const newCursor = () => new LogCursor(ctx.provider, { address: String(escrow.target) }, fromBlock);
  let cursor = newCursor();
  /** Chain time of the block the last run looked at. */
  let lastTime: bigint | undefined;
  /** Reorganisations seen; after each, everything folded from events was forgotten and folded again. */
  let reorgs = 0;

  /** Forgets everything folded from the escrow's events (a reorganisation replaced some): folded again from fromBlock. */
  function reset(): void {
    finished.clear();
    providersOf.clear();
    deadlines.clear();
    lastStatus.clear();
    recheck = new Set();
    unread = new Set();
    knownJobCount = 0n;
    cursor = newCursor();
    reorgs += 1;
  }

  /**
   * Folds the escrow's logs since the last tick, up to `toBlock` (the confirmed block), through the one cursor
   * (sdk/node/logRange.ts); returns the jobs they name. On a reported reorganisation (also at depth 0, where the head
   * itself may be replaced) it forgets what it folded and folds again from `fromBlock`, as the coordinator's view.
   */
  async function scan(toBlock: number): Promise<Set<bigint>> {
    const named = new Set<bigint>();
    let r = await read(ctx, "getLogs", () => cursor.poll(toBlock));
    if (r.reorged) {
      log.warn("chain reorganisation: folding the finalizer's view again", {
        ...r.reorged,
        fromBlock,
      });
      reset();
      r = await read(ctx, "getLogs", () => cursor.poll(toBlock));
    }
    for (const l of r.logs) {
      const parsed = escrow.interface.parseLog(l);
      const jobId = parsed?.args.jobId as bigint | undefined;
      if (!parsed || typeof jobId !== "bigint") continue;
      named.add(jobId);
      if (parsed.name === "CheckpointAccepted") {
        if (!providersOf.has(jobId)) providersOf.set(jobId, new Set());
        providersOf.get(jobId)!.add(parsed.args.provider as string);
      }
      if (parsed.name === "VerdictSubmitted") deadlines.set(jobId, parsed.args.disputeDeadline as bigint);
      if (parsed.name === "DisputeOpened") deadlines.set(jobId, parsed.args.arbiterDeadline as bigint);
    }
    return named;
  }

  /**
   * Jobs whose status may have changed: to read (named by an event, new, acted on last tick, or past a deadline
   * we cannot derive from), and those past a deadline whose status follows from it (decide.ts `derivedStatus`).
   */
  async function changedJobs(block: { number: number; timestamp: number }, jobCount: bigint) {
    const named = await scan(block.number);
    const toRead = new Set(named);
    for (let id = knownJobCount + 1n; id <= jobCount; id++) toRead.add(id);
    if (jobCount > knownJobCount) knownJobCount = jobCount;
    for (const id of recheck) toRead.add(id);
    for (const id of unread) toRead.add(id);
    const derived: Status[] = [];
    const now = BigInt(block.timestamp);
    for (const [jobId, deadline] of deadlines) {
      if (toRead.has(jobId) || now <= deadline) continue;
      const status = derivedStatus(lastStatus.get(jobId), deadline, now);
      if (status) derived.push({ jobId, status });
      else toRead.add(jobId);
    }
    const ids = [...toRead].filter((id) => !finished.has(id) && id <= jobCount).sort(byId);
    unread = new Set(ids);
    return { ids, derived: derived.filter((d) => !finished.has(d.jobId)) };
  }

  /** Every changed job's status at `block`: read through Multicall3, or derived from its deadline. */
  async function statuses(block: Block): Promise<{ jobs: Status[]; read: bigint[]; derived: bigint[] }> {
    const blockTag = block.number;
    const jobCount = await read(ctx, "jobCount", () => ctx.escrow.jobCount({ blockTag }));
    const { ids, derived } = await changedJobs(block, jobCount);
    const target = String(escrow.target);
    const statusCalls = ids.map((id) => ({ target, iface: escrow.interface, fn: "statusOf", args: [id] }));
    const results = await read(ctx, `${ids.length} statuses`, () => batch.read(statusCalls, blockTag));
    const readJobs = ids.map((jobId, i) => ({ jobId, status: statusName(valueOf(results[i])[0] as bigint) }));
    for (const j of readJobs) {
      // A dispute window or arbiter deadline we did not see (before --from-block): look at it every tick.
      if ((j.status === "DisputeWindow" || j.status === "Disputed") && !deadlines.has(j.jobId))
        deadlines.set(j.jobId, 0n);
      lastStatus.set(j.jobId, j.status);
    }
    const jobs = [...readJobs, ...derived].sort((a, b) => byId(a.jobId, b.jobId));
    return { jobs, read: ids, derived: derived.map((d) => d.jobId) };
  }

  /** Unclaimed earnings of each job's providers where they can matter; forgets jobs with nothing left to do. */
  async function withEarnings(jobs: Status[], blockTag: number | "latest"): Promise<FinalizerJob[]> {
    const target = String(escrow.target);
    const claims = jobs.flatMap((j) =>
      earningsMatter(j.status) ? [...(providersOf.get(j.jobId) ?? [])].map((p) => ({ jobId: j.jobId, p })) : [],
    );
    const calls = claims.map(({ jobId, p }) => ({
      target,
      iface: escrow.interface,
      fn: "earningsOf",
      args: [jobId, p],
    }));
    const amounts = await read(ctx, `${claims.length} earnings`, () => batch.read(calls, blockTag));
    const amountOf = new Map(claims.map(({ jobId, p }, i) => [`${jobId}:${p}`, valueOf(amounts[i])[0] as bigint]));
    const out: FinalizerJob[] = jobs.map(({ jobId, status }) => ({
      jobId,
      status,
      earnings: earningsMatter(status)
        ? [...(providersOf.get(jobId) ?? [])].map((provider) => ({
            provider,
            amount: amountOf.get(`${jobId}:${provider}`)!,
          }))
        : [],
    }));
    for (const j of out) {
      if (!nothingLeftToDo(j)) continue;
      finished.add(j.jobId);
      deadlines.delete(j.jobId);
      lastStatus.delete(j.jobId);
      providersOf.delete(j.jobId);
    }
    return out;
  }

  /** The block `depth` below `head` (the head itself at depth 0): what a run decides on. */
  async function confirmed(head: Block | null): Promise<Block | null> {
    if (!head || depth === 0) return head;
    const at = confirmedBlock(head.number, depth);
    return at < 0 ? null : read(ctx, "confirmed block", () => ctx.provider.getBlock(at));
  }

  /** One run; `head` is the chain head to look at (default: the latest); it decides on the confirmed block below it. */
  async function tick(head?: Block): Promise<FinalizerTickReport> {
    const block = await confirmed(head ?? (await read(ctx, "chain head", () => ctx.provider.getBlock("latest"))));
    if (!block) throw new Error("no latest block");
    const { jobs, read: readIds, derived } = await statuses(block);
    lastTime = BigInt(block.timestamp);
    const settleable = jobs.filter((j) => isSettleable(j.status));
    const bulkSettles = planFinalizer(settleable.map((j) => ({ ...j, earnings: [] }))).flat();
    if (await shouldBatch(ctx, bulkSettles)) {
      const r = await settleInBulk(jobs, bulkSettles);
      recheck = new Set(r.plan.map((actions) => actions[0].jobId));
      unread = new Set();
      return { ...r, read: readIds, derived };
    }
    const plan = planFinalizer(await withEarnings(jobs, block.number));
    recheck = new Set(plan.map((actions) => actions[0].jobId));
    unread = new Set();
    const perJob = await mapLimit(plan, 4, async (actions) => {
      const results: { action: FinalizerAction; outcome: Outcome }[] = [];
      for (const action of actions) {
        const outcome = await sendOne(action);
        results.push({ action, outcome });
        // Claims need the job settled; if settling failed for real, they would only revert.
        if (action.method === "settle" && (outcome.kind === "failed" || outcome.kind === "retry-later")) break;
      }
      return results;
    });
    return { plan, sent: perJob.flat(), read: readIds, derived };
  }

  /**
   * Many jobs to settle: every settle in Multicall3 batches first (no earnings read in their way), then the claims
   * of the jobs that settled or were already final, read after the settles landed.
   */
  async function settleInBulk(jobs: Status[], settles: FinalizerAction[]) {
    log.info("decision", {
      action: "settle",
      jobs: settles.length,
      reason: "many jobs settleable: batched through Multicall3",
    });
    const settled = await sendBatched(ctx, settles, log);
    const blocked = new Set(
      settled.filter((s) => s.outcome.kind === "failed" || s.outcome.kind === "retry-later").map((s) => s.action.jobId),
    );
    const plan = planFinalizer(await withEarnings(jobs, "latest"));
    const claims = plan.flat().filter((a) => a.method === "claimEarnings" && !blocked.has(a.jobId));
    const claimed =
      claims.length >= BATCH_MIN
        ? await sendBatched(ctx, claims, log)
        : await mapLimit(claims, 4, async (a) => ({ action: a, outcome: await sendOne(a) }));
    return { plan, sent: [...settled, ...claimed] };
  }

  async function sendOne(action: FinalizerAction): Promise<Outcome> {
    const l = log.child({
      job: action.jobId,
      action: action.method,
      ...(action.method === "claimEarnings" ? { provider: action.provider, amount: action.amount } : {}),
      reason: action.reason,
    });
    l.info("decision");
    return execute(ctx, { method: action.method, args: action.args }, l);
  }

  /** Whether a deadline lies ahead of the last run (something to watch the head for). */
  function watching(): boolean {
    if (lastTime === undefined) return false;
    for (const d of deadlines.values()) if (d >= lastTime) return true;
    return false;
  }

  /** Whether a block at chain time `time` is past a deadline the last run was not past yet: run now. */
  function due(time: bigint): boolean {
    if (lastTime === undefined) return false;
    for (const d of deadlines.values()) if (d >= lastTime && d < time) return true;
    return false;
  }

  /** A deadline the wall clock passed long ago but the head at `headTime` has not (decide.ts staleDeadline). */
  function stale(headTime: bigint): bigint | undefined {
    return staleDeadline(deadlines.values(), headTime, BigInt(Math.floor(ctx.nowMs() / 1000)));
  }

  /** What the runs folded from events so far (tests compare it with a fresh finalizer's). */
  function folded() {
    const sorted = <V>(m: Map<bigint, V>) => [...m.entries()].sort(([a], [b]) => byId(a, b));
    return {
      finished: [...finished].sort(byId),
      providersOf: sorted(providersOf).map(([id, ps]) => [id, [...ps].sort()] as const),
      deadlines: sorted(deadlines),
      lastStatus: sorted(lastStatus),
      reorgs,
    };
  }

  return { tick, watching, due, stale, folded };
}

export type Finalizer = ReturnType<typeof createFinalizer>;

/**
 * Runs the finalizer on `config.cron` until `signal` fires (or once), and meanwhile watches the head every
 * `config.watchMs` while a deadline is ahead: the first block past one starts a run at once, so a job is settled in
 * the next block or two after it became settleable rather than at the next cron run. Resolves with the exit code.
 */
export async function runFinalizer(
  ctx: KeeperContext,
  config: FinalizerConfig,
  signal: AbortSignal,
  finalizer: Finalizer = createFinalizer(ctx, config),
): Promise<number> {
  let head: Block | undefined;
  const guard = nonOverlapping(() => finalizer.tick(head));
  /** A run at `at` (the watch's block), or skipped (undefined) while one is going. */
  const runAt = async (at?: Block) => {
    if (guard.busy()) return undefined;
    head = at;
    try {
      return await guard.run();
    } finally {
      head = undefined;
    }
  };
  const watch = config.once ? Promise.resolve() : watchDeadlines(ctx, finalizer, runAt, config.watchMs, signal);
  const code = await runTicks("finalizer", ctx, config, async () => void (await runAt()), signal);
  await watch;
  await guard.idle();
  return code;
}

async function watchDeadlines(
  ctx: KeeperContext,
  finalizer: Finalizer,
  run: (head?: Block) => Promise<FinalizerTickReport | undefined>,
  watchMs: number,
  signal: AbortSignal,
): Promise<void> {
  let seen = -1;
  const asked: AskState = { unsupported: false, lastBlock: -1, head: -1, headSinceMs: 0 };
  while (!signal.aborted) {
    await sleep(watchMs, signal);
    if (signal.aborted || !finalizer.watching()) continue;
    let head: Block | null;
    try {
      head = await ctx.provider.getBlock("latest");
    } catch (err) {
      // The head could not be read: the cron run still comes, and the next look may work.
      ctx.logger.warn("deadline watch: chain head unreadable", { error: (err as Error)?.message ?? String(err) });
      continue;
    }
    if (head && !finalizer.due(BigInt(head.timestamp))) {
      await askForBlock(ctx, finalizer.stale(BigInt(head.timestamp)), head, asked);
      continue;
    }
    if (!head || head.number === seen) continue;
    try {
      // Skipped while a cron run is going: that block is looked at again next time.
      if ((await run(head)) !== undefined) seen = head.number;
    } catch (err) {
      ctx.logger.error("tick failed", { keeper: "finalizer", error: (err as Error)?.message ?? String(err) });
      seen = head.number;
    }
  }
}

/**
 * A deadline passed on the wall clock, but no block came since (a node that mines only on a transaction): ask it
 * for one with `evm_mine` (anvil, Hardhat), once per head. A node that does not know the method mines on its own
 * (a public chain): said once, never asked again. Either way the next block past the deadline starts a run.
 */
interface AskState {
  /** The node answered that it has no evm_mine: never asked again (a node that did not answer is asked again). */
  unsupported: boolean;
  /** The head we last asked a block after (one ask per head). */
  lastBlock: number;
  /** The head last seen, and since when (keeper clock): the head must stand still the slack too. */
  head: number;
  headSinceMs: number;
}

async function askForBlock(
  ctx: KeeperContext,
  deadline: bigint | undefined,
  head: Block,
  asked: AskState,
): Promise<void> {
  if (asked.head !== head.number) [asked.head, asked.headSinceMs] = [head.number, ctx.nowMs()];
  // Both clocks must say so: the wall clock past the deadline (staleDeadline) and this head unchanged for the slack,
  // so a chain whose time merely lags the wall clock (a test chain, a rewound one) but still mines is not asked.
  const still = ctx.nowMs() - asked.headSinceMs >= Number(STALE_HEAD_SLACK_S) * 1000;
  if (deadline === undefined || !still || asked.unsupported || asked.lastBlock === head.number) return;
  asked.lastBlock = head.number;
  const fields = { deadline: Number(deadline), headBlock: head.number, headTime: head.timestamp };
  try {
    await (ctx.provider as unknown as { send: (m: string, p: unknown[]) => Promise<unknown> }).send("evm_mine", []);
    ctx.logger.info("no block since a deadline passed: asked the node to mine one", fields);
  } catch (err) {
    if (classifyError(err, protocolInterfaces().escrow) === "retryable") {
      // The node did not answer (down, 429s past the bound): no answer, so no "unsupported". Asked again next watch.
      asked.lastBlock = -1;
      ctx.logger.warn("no block since a deadline passed, and the node could not be asked now: asking again", {
        ...fields,
        error: (err as Error)?.message ?? String(err),
      });
      return;
    }
    asked.unsupported = true;
    ctx.logger.warn("no block since a deadline passed, and the node cannot be asked for one: waiting for its next", {
      ...fields,
      error: (err as Error)?.message ?? String(err),
    });
  }
}

const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
