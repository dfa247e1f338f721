/**
 * The provider agent, in the shape of every long-running part: config + a tick + the shared runner (sdk/run/runner.ts),
 * with its behaviour injected (honest unless a fault was asked for: agent/behaviour.ts, agent/faults.ts).
 *
 * `runAgent(config, deps)` prints the provider address, waits for gas money, registers (idempotently), starts the
 * heartbeats and then loops: each tick scans the escrow for Running jobs assigned to this address and works the
 * lowest one until it is done, fenced or the signal stops the agent. All I/O is injected (deps), so tests run the
 * agent in-process against a simulated chain.
 */
import { formatEther, type JsonRpcProvider } from "ethers";
import { formatPrice, formatUsdc } from "../sdk/words/format.ts";
import { probationLine } from "../sdk/rules/probation.ts";
import { NotADevNodeError, setDevBalance } from "../sdk/node/faucet.ts";
import { LOCAL_CHAIN_ID } from "../sdk/node/deployment.ts";
import { isProvenProfile, listTemplates, loadTemplate, localProfile } from "../workloads/index.ts";
import { isRunning, isTraining, type JobView } from "../sdk/rules/job.ts";
import { sleep } from "../sdk/run/retry.ts";
import { ChainWake, eventTopics } from "../sdk/node/chainWake.ts";
import { runLoop, type TickResult } from "../sdk/run/runner.ts";
import { Chain, StoppedError } from "./chain.ts";
import { assignedJobs, decideRegistration, leaseHeartbeatMs, planJob, type Offer } from "./decide.ts";
import { stakeTopUp } from "../sdk/rules/stake.ts";
import { registryProfile } from "./device.ts";
import { behaviourOf } from "./faults.ts";
import { Liveness } from "./liveness.ts";
import { Problems } from "./problems.ts";
import { badges, Progress } from "./progress.ts";
import { TrainerPool } from "./trainers.ts";
import { CheckpointPrefetch } from "./prefetch.ts";
import type { AgentConfig, AgentDeps } from "./types.ts";
import { EarningsWatch } from "./earnings.ts";
import { DiedError, workJob, type JobEnd, type WorkContext } from "./work.ts";

export interface AgentResult {
  exitCode: number;
  address: string;
  /** How each job/epoch the agent touched ended (e.g. "1:1" → "fenced"). */
  outcomes: Map<string, string>;
}

export async function runAgent(config: AgentConfig, deps: AgentDeps): Promise<AgentResult> {
  const me = deps.signer.address;
  const logger = deps.logger;
  const problems = new Problems(deps.clock.now);
  const chain = new Chain({
    protocol: deps.protocol,
    problems,
    logger,
    signal: deps.signal,
    retryBaseMs: config.retryBaseMs,
    retryMaxMs: config.retryMaxMs,
  });
  const outcomes = new Map<string, string>();
  const behaviour = deps.behaviour ?? behaviourOf(config.fault);
  let profile = localProfile(config.device.executionProvider, config.device.providerDevice);
  const live: { ctx?: WorkContext; liveness?: Liveness } = {};
  const trainers = new TrainerPool(config.device, logger, deps.trainerFactory, () => {
    // Steps are computed on the cpu from now on: say so in beats and checkpoints.
    profile = localProfile("cpu");
    if (live.ctx) live.ctx.profile = profile;
    if (live.liveness) live.liveness.opts.profile = profile;
    logger.info("arithmetic profile now", { profile });
  });
  try {
    const network = await chain.read("chainId", () => deps.signer.provider!.getNetwork());
    const tags = badges(config.device, behaviour.fault, network.chainId === LOCAL_CHAIN_ID);
    logger.info("provider agent", {
      address: me,
      chainId: network.chainId,
      device: config.device.model,
      kind: config.device.kind,
      memoryMiB: config.device.memoryMiB,
      executionProvider: config.device.executionProvider,
      ...(behaviour.fault ? { fault: behaviour.fault } : {}),
      badges: tags,
    });
    const minStake = await chain.read("minStake", () => deps.protocol.registry.minStake());
    logger.info(probationLine(minStake), { minStake: formatUsdc(minStake) });
    logger.info(`execution provider ${config.device.providerReason ?? config.device.executionProvider}`, {
      executionProvider: config.device.executionProvider,
      profile,
    });
    // A GPU provider is tried now: one that cannot open a session falls back before the first beat. Otherwise its
    // unproven profile would never be assigned the job whose trainer would reveal the failure.
    if (config.device.executionProvider !== "cpu")
      await trainers
        .get(loadTemplate("blobs-tiny"))
        .catch((err: unknown) =>
          logger.warn("execution provider check failed", { error: err instanceof Error ? err.message : String(err) }),
        );
    if (!listTemplates().some((t) => isProvenProfile(t, profile)))
      logger.warn("this arithmetic profile is proven for no template: the coordinator assigns it no job", {
        profile,
        hint: "--device cpu works now; a GPU profile joins PROVEN_PROFILES once its reference hashes are proven",
      });
    const local = network.chainId === LOCAL_CHAIN_ID;
    if (!(await waitForGas(config, deps, chain, local))) return { exitCode: 0, address: me, outcomes };
    if (!(await register(config, deps, chain))) return { exitCode: 1, address: me, outcomes };
    if (!(await depositStake(config, deps, chain, local))) {
      return { exitCode: 1, address: me, outcomes };
    }
    if (config.dryRun) return { exitCode: 0, address: me, outcomes };
    const lease = await chain.read("leaseDuration", () => deps.protocol.escrow.leaseDuration());
    const liveness = new Liveness({
      wallet: deps.signer,
      chainId: network.chainId,
      escrow: String(deps.protocol.escrow.target),
      send: deps.heartbeatSender,
      chain,
      logger,
      signal: deps.signal,
      intervalMs: config.heartbeatMs,
      leaseEveryMs: leaseHeartbeatMs(lease),
      now: deps.clock.now,
      ignoreFence: behaviour.ignoresFence,
      profile,
      problems,
    });
    const ctx: WorkContext = {
      config,
      deps,
      chain,
      me,
      profile,
      logger,
      liveness,
      problems,
      behaviour,
      progress: new Progress({ tags, fault: behaviour.fault, logger, terminal: deps.terminal, now: deps.clock.now }),
      trainers,
      wake: decisionWake(deps),
      prefetch: new CheckpointPrefetch(deps.store),
    };
    Object.assign(live, { ctx, liveness });
    liveness.start();
    // What it earns, from the escrow's events: each credit, then from when it is withdrawable and the command.
    const stopEarnings = new AbortController();
    const earnings = new EarningsWatch({
      protocol: deps.protocol,
      me,
      logger,
      signal: AbortSignal.any([deps.signal, stopEarnings.signal]),
      intervalMs: Math.max(config.pollMs, config.idleMs),
      withdraw: config.withdrawCommand ?? "npx gpuchain withdraw --key FILE",
    });
    const watching = earnings.run();
    try {
      return { exitCode: await loop(ctx, outcomes), address: me, outcomes };
    } finally {
      // --once: what the last tick's acceptances credited is said before the agent exits.
      if (config.once && !deps.signal.aborted) await earnings.poll().catch(() => undefined);
      stopEarnings.abort();
      await watching;
      ctx.progress.done();
      await ctx.trainers.closeAll();
      await liveness.stop();
    }
  } catch (err) {
    if (err instanceof StoppedError || deps.signal.aborted) {
      logger.info("stopped");
      return { exitCode: 0, address: me, outcomes };
    }
    if (err instanceof DiedError) return { exitCode: 137, address: me, outcomes };
    throw err;
  } finally {
    await trainers.closeAll(); // the start's probe too, on the paths that end before the work loop
  }
}

/**
 * On the shared runner: one tick at a time until stopped (`--once`: one tick). A tick works every job assigned to
 * us now, lowest first, re-scanning after each; with none left, it marks us idle and the runner waits idleMs.
 */
async function loop(ctx: WorkContext, outcomes: Map<string, string>): Promise<number> {
  const { config, deps } = ctx;
  // How this agent left each job at an epoch (finished, declined, fenced): skipped until the epoch changes (a
  // restart re-decides them), a finished one only while the chain still says every step is accepted: a
  // reorganisation that removes the final acceptance (or the final report) gives the job back to its holder.
  const settled = new Map<string, JobEnd>();
  let seen: JobView[] = [];
  const preloaded = new Set<string>();
  const skipped = (j: JobView) => {
    const end = settled.get(`${j.jobId}:${j.epoch}`);
    return end !== undefined && (end !== "done" || planJob(j).kind === "done");
  };
  const nextJob = async () => {
    seen = await ctx.chain.jobs();
    return assignedJobs(seen, ctx.me).find((j) => !skipped(j));
  };
  // What ends the agent (stopped, died, a deployment for another chain) is not a failed tick to retry: rethrown.
  let fatal: { err: unknown } | undefined;
  const tick = async (): Promise<TickResult | void> => {
    try {
      for (let job = await nextJob(); job && !deps.signal.aborted; job = await nextJob()) {
        const outcome = await workJob(ctx, job);
        const key = `${job.jobId}:${job.epoch}`;
        outcomes.set(key, outcome);
        if (outcome === "stopped") return { stop: true };
        settled.set(key, outcome);
      }
    } catch (err) {
      fatal = { err };
      return { stop: true, exitCode: 1 };
    }
    if (config.once) {
      ctx.logger.info("no more assigned work (--once): exiting");
      return { stop: true };
    }
    ctx.liveness.set(undefined);
    preload(ctx, seen, preloaded);
    readAhead(ctx, seen);
  };
  const code = await runLoop({
    name: "agent",
    tick,
    intervalMs: config.idleMs,
    wait: ctx.wake && ((ms, signal) => ctx.wake!.sleep(ms, signal)), // an assignment wakes the idle agent
    once: config.once,
    signal: deps.signal,
    logger: ctx.logger,
    announce: false, // it announces itself ("provider agent", "stopped cleanly")
  });
  if (fatal) throw fatal.err;
  if (config.once && !deps.signal.aborted) return code;
  ctx.progress.done();
  ctx.logger.info("stopped cleanly");
  return code;
}

/**
 * An idle agent loads the trainer of every job another provider is making progress on (failover ≤ 5 s): a takeover
 * after a failover then starts training at once instead of loading the data set and sessions first. Only once
 * the job has a checkpoint (its holder has loaded by then: no competing loads at the job's start); in the
 * background, once per template; one it does not know or that does not fit its memory is simply not loaded.
 */
function preload(ctx: WorkContext, jobs: JobView[], tried: Set<string>): void {
  for (const j of jobs) {
    if (!isRunning(j.status) || (j.acceptedStep === 0 && j.pendingStep === 0) || tried.has(j.templateId)) continue;
    tried.add(j.templateId);
    let template;
    try {
      template = loadTemplate(j.templateId);
    } catch {
      continue;
    }
    if (ctx.trainers.has(template)) continue;
    ctx.logger.info("preloading a trainer for a possible takeover", {
      job: j.jobId,
      template: template.descriptor.name,
    });
    void ctx.trainers.get(template).catch(() => undefined);
  }
}

/**
 * An idle agent also reads ahead the latest accepted checkpoint of every running job another provider holds and
 * whose template it knows (failover ≤ 5 s: a takeover's first segment starts without an S3 read and decode).
 */
function readAhead(ctx: WorkContext, jobs: JobView[]): void {
  const prefetch = ctx.prefetch;
  if (!prefetch) return;
  const keep = new Set<string>();
  for (const j of jobs) {
    // Open too: between the unassign and the assign is when a takeover needs it most.
    if (!isTraining(j.status) || j.acceptedStep === 0 || j.provider.toLowerCase() === ctx.me.toLowerCase()) continue;
    try {
      loadTemplate(j.templateId);
    } catch {
      continue;
    }
    keep.add(j.jobId.toString());
    prefetch.ahead(j.jobId, j.acceptedHash);
  }
  prefetch.retain(keep);
}

/** The escrow events an agent waits for (decisions pushed, not polled every pollMs/idleMs). */
const WAKE_EVENTS = [
  "ProviderAssigned",
  "ProviderUnassigned",
  "CheckpointAccepted",
  "CheckpointRefused",
  "CheckpointLapsed",
  "JobCancelled",
  "JobExpired",
];

function decisionWake(deps: AgentDeps): ChainWake | undefined {
  const provider = deps.signer.provider;
  if (!provider) return undefined;
  const { escrow } = deps.protocol;
  const filter = { address: String(escrow.target), topics: eventTopics(escrow.interface, WAKE_EVENTS) };
  return new ChainWake({ provider, filter, now: deps.clock.now });
}

/** Waits until the key holds ETH for gas ("fund <address> with ETH for gas"). False when stopped first. */
async function waitForGas(config: AgentConfig, deps: AgentDeps, chain: Chain, local: boolean): Promise<boolean> {
  const me = deps.signer.address;
  let asked = 0;
  while (!deps.signal.aborted) {
    const balance = await chain.read("balance", () => deps.signer.provider!.getBalance(me));
    if (balance > 0n) {
      deps.logger.info("gas balance", { address: me, eth: formatEther(balance) });
      return true;
    }
    if (config.faucet && asked++ === 0 && (await faucetGas(deps, me))) continue;
    // On a development chain the way to do it is one command (cli/faucet.ts); elsewhere: send ETH from a funded key.
    const how = local ? { faucet: `npx gpuchain faucet ${me} --rpc <this chain's URL>` } : {};
    if (asked++ % 10 === 0)
      deps.logger.warn(`fund ${me} with ETH for gas`, { address: me, waiting: !config.dryRun, ...how });
    if (config.dryRun) return true;
    await sleep(config.fundingPollMs, deps.signal);
  }
  return false;
}

/** `--faucet`: 1 test ETH from a development node's own balance method; false (said once) on any other node. */
async function faucetGas(deps: AgentDeps, me: string): Promise<boolean> {
  try {
    await setDevBalance(deps.signer.provider as unknown as Pick<JsonRpcProvider, "send">, me, FAUCET_WEI);
    deps.logger.info("--faucet: took test ETH for gas from the development node", { address: me, eth: "1" });
    return true;
  } catch (err) {
    if (!(err instanceof NotADevNodeError)) throw err;
    deps.logger.warn(`--faucet works only on a development node: ${err.message}`, { address: me });
    return false;
  }
}

const FAUCET_WEI = 10n ** 18n;

/**
 * Tops the registry stake up to STAKE_LOCKS network-minimum locks (an identity without stake at risk takes no
 * work). On a local chain the test USDC comes from its open faucet; elsewhere from the provider's own balance.
 */
async function depositStake(config: AgentConfig, deps: AgentDeps, chain: Chain, local: boolean): Promise<boolean> {
  const me = deps.signer.address;
  const { registry, usdc } = deps.protocol;
  const [stake, minStake] = await chain.read(
    "stake",
    async () => [await registry.stakeOf(me), await registry.minStake()] as const,
  );
  const amount = stakeTopUp(stake, minStake);
  const fields = { deposited: formatUsdc(stake.deposited), topUp: formatUsdc(amount) };
  if (amount === 0n) {
    deps.logger.info("stake in place; nothing sent", fields);
    return true;
  }
  if (config.dryRun) {
    deps.logger.info("dry run: would deposit stake", fields);
    return true;
  }
  const registryAddress = await registry.getAddress();
  const steps = [
    ...(local ? [["mint", () => usdc.mint(me, amount)] as const] : []),
    ["approve", () => usdc.approve(registryAddress, amount)] as const,
    ["depositStake", () => registry.depositStake(amount)] as const,
  ];
  for (const [what, send] of steps) {
    const r = await chain.write(what, send);
    if (!r.ok) {
      deps.logger.error(`stake ${what} failed`, { reason: r.description, ...fields });
      return false;
    }
  }
  deps.logger.info("stake deposited", fields);
  return true;
}

/** Registers or updates the offer; nothing is sent when the registry already holds it. */
async function register(config: AgentConfig, deps: AgentDeps, chain: Chain): Promise<boolean> {
  const me = deps.signer.address;
  const offer: Offer = { name: config.name, pricePerStep: config.pricePerStep, ...registryProfile(config.device) };
  const plan = decideRegistration(await chain.provider(me), offer);
  for (const note of plan.notes) deps.logger.warn(note);
  const fields = {
    name: offer.name,
    price: formatPrice(offer.pricePerStep),
    device: offer.deviceModel,
    memoryMiB: offer.memoryMiB,
  };
  if (plan.calls.length === 0) deps.logger.info("registered offer unchanged; nothing sent", fields);
  if (config.dryRun) {
    deps.logger.info("dry run: would send", { calls: plan.calls.map((c) => c.fn), ...fields });
    return true;
  }
  const { registry } = deps.protocol;
  for (const call of plan.calls) {
    const r = await chain.write(call.fn, () =>
      call.fn === "register"
        ? registry.register(...call.args)
        : call.fn === "update"
          ? registry.update(...call.args)
          : registry.reactivate(),
    );
    if (!r.ok) {
      deps.logger.error(`registry ${call.fn} failed`, { reason: r.description });
      return false;
    }
    deps.logger.info(`registry ${call.fn} sent`, { tx: r.hash, ...fields });
  }
  return true;
}
