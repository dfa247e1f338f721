/**
 * The coordinator keeper: receives heartbeats over HTTP, and each tick brings the Open and Running jobs and the
 * registered providers up to date from the chain's events (chainView.ts), decides (decide.ts, pure), and sends
 * unassign / assign, each on its own.
 */
import { changeLogger, execute, mapLimit, read, type KeeperContext, type Outcome } from "../chain.ts";
import { startJsonServer } from "../http.ts";
import { runTicks } from "../keeper.ts";
import { HeartbeatView } from "./heartbeatView.ts";
import type { UnassignNote } from "../../sdk/rules/heartbeat.ts";
import type { CoordinatorConfig } from "./config.ts";
import { memoryNeed } from "./config.ts";
import { CoordinatorChainView } from "./chainView.ts";
import { jobEpochKey, planCoordinator, type CoordinatorJob, type CoordinatorView, type Decision } from "./decide.ts";
import { HeartbeatBook } from "./heartbeats.ts";
import { registryCheck } from "./registered.ts";
import { templateMemoryMiB, templateStepMs } from "./stepTime.ts";
import { isProvenProfile, loadTemplate, UnknownTemplateError } from "../../workloads/index.ts";
import { eventsFrom } from "../../sdk/node/deployment.ts";

/**
 * The proven-profile safety net: a template this node knows goes only to providers whose reported arithmetic profile is
 * proven to give its bits. A template it does not know is not replayed by verifiers built from this code either.
 */
function profileProven(templateId: string, profile: string | undefined): boolean {
  // Asked for every (Open job, provider) pair of a tick: templates never change at run time, so remember answers.
  const key = `${templateId}|${profile ?? ""}`;
  let known = proven.get(key);
  if (known === undefined) {
    if (proven.size >= 1_024) proven.clear(); // profiles come from beats: keep the cache bounded
    proven.set(key, (known = checkProfile(templateId, profile)));
  }
  return known;
}
const proven = new Map<string, boolean>();

function checkProfile(templateId: string, profile: string | undefined): boolean {
  try {
    return isProvenProfile(loadTemplate(templateId), profile);
  } catch (e) {
    if (e instanceof UnknownTemplateError) return true;
    throw e;
  }
}

export interface CoordinatorTickReport {
  decisions: Decision[];
  sent: { decision: Decision; outcome: Outcome }[];
  /**
   * Where the tick's time went (bench/keepers.ts): reading the chain, deciding, sending (everything after the
   * decision), and of that the same-tick reassignment of jobs it unassigned (re-read, decide, assign; 0 if none).
   */
  timings: { readMs: number; decideMs: number; sendMs: number; reassignMs: number };
}

/** The provider changed its offer (deactivated, repriced) or got fenced between our read and our send. */
const ASSIGN_RACES = [
  "JobEscrowProviderInactive",
  "JobEscrowProviderFenced",
  "JobEscrowPriceAboveMax",
  "JobEscrowBudgetShort",
];
/** Without the coordinator role: the provider extended its lease between our read and our send. */
const UNASSIGN_RACES = ["JobEscrowLeaseActive"];

export class Coordinator {
  /** Heartbeats received (served by `runCoordinator` on POST /heartbeat). */
  readonly book: HeartbeatBook;
  /** When each Running `${jobId}:${epoch}` was first seen (or assigned by us). */
  readonly watchStart = new Map<string, number>();
  private readonly ctx: KeeperContext;
  private readonly config: CoordinatorConfig;
  /** Jobs, providers and fencing, kept up to date from events. */
  readonly chain: CoordinatorChainView;
  private readonly quiet = changeLogger();
  /**
   * Why this coordinator took each job away (the newest UNASSIGNS_KEPT): the chain records only "the coordinator
   * unassigned it", so dashboards ask here (GET /unassignments) for "no heartbeat" versus "no progress".
   * In memory only: after a restart the older ones are simply unknown.
   */
  readonly unassigns: UnassignNote[] = [];

  constructor(ctx: KeeperContext, config: CoordinatorConfig) {
    this.ctx = ctx;
    this.config = config;
    const scope = {
      chainId: ctx.chainId.toString(),
      escrow: String((ctx.escrow as unknown as { target: string }).target),
    };
    this.chain = new CoordinatorChainView(ctx, eventsFrom(config.fromBlock, ctx));
    this.book = new HeartbeatBook(scope, config.maxClockSkewMs, registryCheck(ctx, this.chain.registered));
  }

  /**
   * One tick: read the chain, decide (pure), send each unassign / assign on its own. A job this tick unassigned
   * (its receipt in) is decided again at the new head and assigned in the same tick: failover does not wait a tick.
   */
  async tick(): Promise<CoordinatorTickReport> {
    const { view, decisions, readMs, decideMs } = await this.plan();
    const t2 = performance.now();
    this.logDecisions(decisions);
    const actions = decisions.filter((d) => d.action === "assign" || d.action === "unassign");
    const sent = await mapLimit(actions, 8, (decision) => this.send(decision, view.nowMs));
    const freed = new Set(sent.filter(unassignedNow).map((s) => s.decision.jobId));
    const t3 = performance.now();
    if (freed.size > 0) {
      const again = await this.plan();
      const reassign = again.decisions.filter((d) => freed.has(d.jobId) && d.action === "assign");
      decisions.push(...reassign);
      sent.push(...(await mapLimit(reassign, 8, (decision) => this.send(decision, again.view.nowMs))));
    }
    const end = performance.now();
    const timings = { readMs, decideMs, sendMs: end - t2, reassignMs: freed.size > 0 ? end - t3 : 0 };
    return { decisions, sent, timings };
  }

  /** Logs each wait or keep once per change (an assign or unassign logs itself when sent). */
  private logDecisions(decisions: Decision[]): void {
    for (const d of decisions) {
      if (d.action === "assign" || d.action === "unassign") this.quiet.forget(`job ${d.jobId}`);
      else if (this.quiet.changed(`job ${d.jobId}`, `${d.epoch} ${d.action} ${d.reason}`))
        this.ctx.logger.info("decision", fields(d));
    }
  }

  /** The tick's read and decision without sending anything (what `tick` acts on; the bench times it alone). */
  async plan(): Promise<{ view: CoordinatorView; decisions: Decision[]; readMs: number; decideMs: number }> {
    const t0 = performance.now();
    const view = await this.snapshot(this.ctx.nowMs());
    const t1 = performance.now();
    const decisions = planCoordinator(view);
    return { view, decisions, readMs: t1 - t0, decideMs: performance.now() - t1 };
  }

  private async send(decision: Decision, nowMs: number): Promise<{ decision: Decision; outcome: Outcome }> {
    const l = this.ctx.logger.child(fields(decision));
    l.info("decision");
    const call =
      decision.action === "assign"
        ? { method: "assign", args: [decision.jobId, decision.provider], races: ASSIGN_RACES }
        : { method: "unassign", args: [decision.jobId], races: UNASSIGN_RACES };
    const outcome = await execute(this.ctx, call, l);
    if (decision.action === "unassign" && outcome.kind === "confirmed") this.noteUnassign(decision, nowMs);
    // Our own assignment: its timeout starts now, not at the next tick's first sight.
    if (decision.action === "assign" && outcome.kind === "confirmed") {
      this.watchStart.set(jobEpochKey(decision.jobId, decision.epoch + 1n), nowMs);
    }
    // Fenced by something our events did not show (before --from-block): never offer it this job again.
    if (decision.action === "assign" && outcome.kind === "race" && outcome.error.includes("JobEscrowProviderFenced")) {
      this.chain.markFenced(decision.jobId, decision.provider!);
    }
    return { decision, outcome };
  }

  /** The head block and when this coordinator first saw it (its clock): chain time moves on between blocks. */
  private head = { number: -1, seenAtMs: 0 };

  private noteUnassign(d: Decision, nowMs: number): void {
    this.unassigns.push({
      jobId: d.jobId.toString(),
      epoch: d.epoch.toString(),
      provider: d.provider ?? "",
      reason: d.reason,
      at: nowMs,
    });
    if (this.unassigns.length > UNASSIGNS_KEPT) this.unassigns.shift();
  }

  /** Everything a decision needs, at one block: the chain view brought up to date from events (chainView.ts). */
  private async snapshot(nowMs: number): Promise<CoordinatorView> {
    const { ctx, config, chain } = this;
    const block = await read(ctx, "chain head", () => ctx.provider.getBlock("latest"));
    if (!block) throw new Error("no latest block");
    const { coordinator, jobCount } = await chain.head(block.number);
    await chain.refresh(block.number, jobCount);
    const jobs = [...chain.jobs.values()];
    this.trackWatchStart(jobs, nowMs);
    if (block.number !== this.head.number) this.head = { number: block.number, seenAtMs: nowMs };
    this.book.prune(nowMs, Math.max(60_000, 10 * config.heartbeatTimeoutMs));
    return {
      nowMs,
      chainTime: projectedChainTime(BigInt(block.timestamp), nowMs - this.head.seenAtMs),
      timeoutMs: config.heartbeatTimeoutMs,
      startGraceMs: config.startGraceMs,
      isCoordinator: ctx.address ? ctx.address.toLowerCase() === coordinator.toLowerCase() : ctx.dryRun,
      jobs,
      providers: [...chain.providers.values()],
      lastBeat: this.book.lastBeat,
      lastJobBeat: this.book.lastJobBeat,
      watchStart: this.watchStart,
      fenced: chain.fenced,
      memoryNeedMiB: memoryNeed(config, templateMemoryMiB),
      profileProven,
      minStake: chain.minStake,
      // No starving (decide.ts): progress, not beats alone; idle holds from chain events; track records.
      expectedStepMs: templateStepMs,
      progressFloorMs: config.progressFloorMs,
      jobSteps: this.book.jobSteps,
      records: chain.history.records,
      probationPriced: config.newcomerFailover === "priced",
      idleOn: chain.history.idleOn,
      struckOn: chain.history.struckOn,
      backoff: { baseS: config.idleBackoffS, capS: config.idleBackoffCapS },
      // Slashed for a proven fault, no deposit since: not assigned until it re-stakes (sdk/rules/restake.ts).
      restake: chain.restake.waiting,
    };
  }

  /** The timeout of a Running (job, epoch) runs from its first sight until its first beat. */
  private trackWatchStart(jobs: CoordinatorJob[], nowMs: number): void {
    const running = new Set(jobs.filter((j) => j.status === "Running").map((j) => jobEpochKey(j.jobId, j.epoch)));
    for (const key of running) if (!this.watchStart.has(key)) this.watchStart.set(key, nowMs);
    for (const key of this.watchStart.keys()) if (!running.has(key)) this.watchStart.delete(key);
  }
}

const UNASSIGNS_KEPT = 200;

/** An unassign this tick mined: its job is Open again at the next read (the chain says so, not our guess). */
const unassignedNow = (s: { decision: Decision; outcome: Outcome }) =>
  s.decision.action === "unassign" && s.outcome.kind === "confirmed";

export function createCoordinator(ctx: KeeperContext, config: CoordinatorConfig): Coordinator {
  return new Coordinator(ctx, config);
}

function fields(d: Decision): Record<string, unknown> {
  return {
    job: d.jobId,
    epoch: d.epoch,
    step: d.step,
    action: d.action,
    ...(d.provider && d.action !== "wait" ? { provider: d.provider } : {}),
    reason: d.reason,
  };
}

/** Serves `POST /heartbeat` and runs the tick loop until `signal` fires (or once). */
export async function runCoordinator(
  ctx: KeeperContext,
  config: CoordinatorConfig,
  signal: AbortSignal,
): Promise<number> {
  const coordinator = createCoordinator(ctx, config);
  const run = () => runTicks("coordinator", ctx, config, async () => void (await coordinator.tick()), signal);
  // One tick has no time to hear heartbeats: --once only unassigns lapsed leases (and logs its decisions).
  if (config.once) return run();
  const beats = new HeartbeatView(); // read-only, for dashboards (GET /heartbeats)
  const server = await startJsonServer({
    host: config.host,
    port: config.port,
    logger: ctx.logger,
    routes: {
      "POST /heartbeat": beats.tap(coordinator.book.handler(ctx.nowMs), ctx.nowMs),
      "GET /heartbeats": beats.route(ctx.nowMs),
      "GET /unassignments": () => ({ status: 200, body: { unassignments: coordinator.unassigns } }),
      "GET /health": () => ({ status: 200, body: { ok: true } }),
    },
  });
  try {
    return await run();
  } finally {
    await server.close();
  }
}

/**
 * Chain time now: the head block's timestamp, moved on by the wall time since that block was first seen, less a
 * second. A chain that mines only on demand (a Hardhat or anvil node with automine, nobody sending) stamps its next
 * block with the wall clock, so a deadline passes for the next transaction although the head block never moves;
 * the second's margin keeps a decision from landing in a block still at the deadline. On a chain with steady blocks
 * the head moves every block, and this is its timestamp.
 */
export function projectedChainTime(headTimestamp: bigint, sinceSeenMs: number): bigint {
  const moved = Math.floor(sinceSeenMs / 1_000) - 1;
  return moved > 0 ? headTimestamp + BigInt(moved) : headTimestamp;
}
