/**
 * Keepers at scale: 1,000 concurrent jobs and 1,000 providers on Hardhat's in-process simulated chain (EDR), served
 * over HTTP by a counting JSON-RPC proxy in this process, so the keepers talk to it exactly as to a node (ethers
 * JsonRpcProvider, sdk/contracts.ts `rpcProvider`) and every request they send is counted.
 *
 * Setup (not counted) goes through the in-process connection. Heartbeats are put straight into the coordinator's
 * book (1,000 signed beats a second would measure secp256k1 in JS, not the tick); the check of one signed beat is
 * measured on its own (`keeper_heartbeat_check_ms`). Run alone: `node bench/keepers.ts`.
 */
import { createServer, type Server } from "node:http";
import { network } from "hardhat";
import { Wallet, type JsonRpcProvider } from "ethers";
import type { JobEscrow } from "../types/ethers-contracts/index.ts";
import GPUChainLocal from "../ignition/modules/GPUChainLocal.ts";
import { TEST_KEYS } from "../demo/chain.ts";
import { coordinatorConfig } from "../keepers/coordinator/config.ts";
import { createCoordinator, type Coordinator } from "../keepers/coordinator/tick.ts";
import { createFinalizer } from "../keepers/finalizer/tick.ts";
import { keeperContext } from "../keepers/context.ts";
import { rpcProvider } from "../sdk/contracts.ts";
import { createLogger } from "../sdk/log.ts";
import { signHeartbeat } from "../sdk/heartbeat.ts";
import { machineId } from "../sdk/machine.ts";
import {
  checkpointDecisionDigest,
  escrowDomain,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../sdk/verifierSignatures.ts";

const JOBS = Number(process.env.BENCH_KEEPER_JOBS ?? 1_000);
const PROVIDERS = Number(process.env.BENCH_KEEPER_PROVIDERS ?? 1_000);
const TIMEOUT_MS = 5_000;
const TICK_MS = 1_000;

type Progress = (line: string) => void;
const benchStart = performance.now();
const elapsed = () => `${((performance.now() - benchStart) / 1000).toFixed(0)} s`;
type Eip1193 = { request(a: { method: string; params?: unknown[] }): Promise<unknown> };

/** A JSON-RPC server in front of the in-process chain that counts every call (batches count per call). */
async function countingProxy(inner: Eip1193) {
  const counts = new Map<string, number>();
  const millis = new Map<string, number>();
  let httpRequests = 0;
  const answer = async (req: { id: unknown; method: string; params?: unknown[] }) => {
    counts.set(req.method, (counts.get(req.method) ?? 0) + 1);
    const params = JSON.stringify(req.params).slice(0, 120);
    if (process.env.BENCH_KEEPER_TRACE) process.stderr.write(`[rpc] ${req.method} ${params}\n`);
    const started = performance.now();
    try {
      return { jsonrpc: "2.0", id: req.id, result: await inner.request({ method: req.method, params: req.params }) };
    } finally {
      millis.set(req.method, (millis.get(req.method) ?? 0) + performance.now() - started);
    }
  };
  const guarded = async (req: { id: unknown; method: string; params?: unknown[] }) => {
    try {
      return await answer(req);
    } catch (e) {
      const err = e as { code?: number; message?: string; data?: unknown };
      return { jsonrpc: "2.0", id: req.id, error: { code: err.code ?? -32603, message: err.message, data: err.data } };
    }
  };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      httpRequests++;
      const parsed = JSON.parse(body);
      const out = Array.isArray(parsed) ? await Promise.all(parsed.map(guarded)) : await guarded(parsed);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(out));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  const total = () => [...counts.values()].reduce((a, b) => a + b, 0);
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    millis,
    total,
    http: () => httpRequests,
    reset: () => (counts.clear(), millis.clear(), (httpRequests = 0)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 1) => Number(x.toFixed(d));
const rssMb = () => process.memoryUsage().rss / 2 ** 20;

export async function benchKeepers(progress: Progress = () => {}): Promise<Record<string, number>> {
  const connection = await network.create();
  const { ethers, ignition, networkHelpers } = connection;
  const [owner, coordinatorSigner, , v1, v2, , , client] = await ethers.getSigners();
  // Setting up 1,000 jobs takes minutes of chain time: a day-long lease keeps the steady ticks steady.
  const d = await ignition.deploy(GPUChainLocal, { parameters: { GPUChainLocal: { leaseDurationSeconds: 86_400 } } });
  const escrow = (await ethers.getContractAt("JobEscrow", await d.escrow.getAddress())) as unknown as JobEscrow;
  const usdc = await ethers.getContractAt("TestUSDC", await d.usdc.getAddress());
  const registry = await ethers.getContractAt("ProviderRegistry", await d.registry.getAddress());
  const template = ethers.id("bench-keepers-template");
  await escrow.connect(owner).setTemplateApproval(template, true);
  await usdc.mint(client.address, 10n ** 15n);
  await usdc.connect(client).approve(await escrow.getAddress(), ethers.MaxUint256);

  progress(`keepers [${elapsed()}]: creating ${JOBS} jobs and registering ${PROVIDERS} providers`);
  const request = {
    templateId: template,
    totalSteps: 10,
    checkpointInterval: 10,
    maxPricePerStep: 1_000n,
    budget: 100_000n,
    disputeWindow: 3_600n,
  };
  for (let i = 0; i < JOBS; i++) await escrow.connect(client).createJob(request);
  const providers: string[] = [];
  for (let i = 0; i < PROVIDERS; i++) {
    const address = ethers.getAddress(ethers.zeroPadValue(ethers.toBeHex(0x10000 + i), 20));
    await networkHelpers.setBalance(address, 10n ** 18n);
    const signer = await ethers.getImpersonatedSigner(address);
    await registry.connect(signer).register(`p${i}`, BigInt(500 + (i % 400)), 1, "bench-gpu", 16_384);
    // Stake for a few jobs' locks (the escrow checks it on assign).
    await usdc.mint(address, 10n ** 8n);
    await usdc.connect(signer).approve(await registry.getAddress(), 10n ** 8n);
    await registry.connect(signer).depositStake(10n ** 8n);
    providers.push(address);
  }

  const proxy = await countingProxy(connection.provider as unknown as Eip1193);
  const provider = rpcProvider(proxy.url, 250) as JsonRpcProvider;
  const addresses = {
    escrow: await escrow.getAddress(),
    registry: await registry.getAddress(),
    usdc: await usdc.getAddress(),
    verifierSafe: await d.verifierSafe.getAddress(),
    multicall3: await d.multicall3.getAddress(),
  };
  const deployment = { ...addresses, safe: {} as never };
  const chainId = (await ethers.provider.getNetwork()).chainId;
  let now = Date.now();
  const clock = () => now;
  const logger = createLogger({ component: "bench", write: () => {} });
  const ctx = await keeperContext({
    deployment,
    provider,
    chainId,
    logger,
    signer: new Wallet(TEST_KEYS.coordinator, provider),
    nowMs: clock,
  });
  const config = coordinatorConfig({ "heartbeat-timeout-ms": String(TIMEOUT_MS), "start-grace-ms": "0" });
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const keeper = createCoordinator(ctx, config);
  const out: Record<string, number> = {};

  const beatIdle = (who: string[]) => {
    for (const a of who) keeper.book.lastBeat.set(a.toLowerCase(), { receivedAt: now, jobId: "0", epoch: "0" });
  };
  const beatJobs = async (k: Coordinator, skip = new Set<string>()) => {
    for (const job of k.chain.jobs.values()) {
      if (job.status !== "Running" || skip.has(job.provider.toLowerCase())) continue;
      const addr = job.provider.toLowerCase();
      k.book.lastBeat.set(addr, { receivedAt: now, jobId: job.jobId.toString(), epoch: job.epoch.toString() });
      k.book.lastJobBeat.set(`${job.jobId}:${job.epoch}:${addr}`, now);
    }
  };

  // 1. The worst case for assignment: every job Open, 100 providers alive, the first tick (reads everything).
  progress(`keepers [${elapsed()}]: first tick, 1000 Open jobs, 100 providers alive`);
  beatIdle(providers.slice(0, 100));
  proxy.reset();
  let r = await keeper.tick();
  out.keeper_tick_ms_1000_jobs_100_providers = round(r.timings.readMs + r.timings.decideMs);
  out.keeper_tick_read_ms_1000_jobs_cold = round(r.timings.readMs);
  out.keeper_tick_decide_ms_1000_jobs_100_providers = round(r.timings.decideMs);
  out.keeper_assign_sends_100 = r.sent.filter((s) => s.outcome.kind === "confirmed").length;
  out.keeper_assign_send_ms_100 = round(r.timings.sendMs);
  out.keeper_rpc_calls_first_tick_1000_jobs = proxy.total();
  // Time the chain itself spent answering (in this process): the node's share of the cold read.
  out.keeper_tick_cold_node_ms_getLogs = round(proxy.millis.get("eth_getLogs") ?? 0);
  out.keeper_tick_cold_node_ms_eth_call = round(proxy.millis.get("eth_call") ?? 0);

  // 2. The rest of the providers come alive: every job gets one (sends timed apart from the tick).
  progress(`keepers [${elapsed()}]: assigning the other 900 jobs`);
  now += TICK_MS;
  beatIdle(providers.slice(100));
  await beatJobs(keeper);
  r = await keeper.tick();
  out.keeper_assign_send_ms_900 = round(r.timings.sendMs);
  now += TICK_MS;
  await beatJobs(keeper);
  await keeper.tick(); // reads the 900 assignments' events
  await beatJobs(keeper);

  // 3. Steady state: 1000 Running jobs, 1000 providers beating; 50 leases extended on chain between ticks.
  progress(`keepers [${elapsed()}]: steady ticks, 1000 Running jobs, 1000 providers`);
  const running = [...keeper.chain.jobs.values()].filter((j) => j.status === "Running");
  out.keeper_running_jobs = running.length;
  const ticks: number[] = [];
  const calls: number[] = [];
  const read: number[] = [];
  for (let t = 0; t < 6; t++) {
    for (const j of running.slice(t * 50, t * 50 + 50)) {
      await escrow.connect(await ethers.getImpersonatedSigner(j.provider)).heartbeat(j.jobId, j.epoch);
    }
    now += TICK_MS;
    await beatJobs(keeper);
    proxy.reset();
    const started = performance.now();
    await keeper.tick();
    ticks.push(performance.now() - started);
    calls.push(proxy.total());
    read.push(keeper.chain.last.jobsRead);
  }
  out.keeper_tick_ms_1000_jobs = round(median(ticks));
  out.keeper_rpc_calls_per_tick_1000_jobs = median(calls);
  out.keeper_jobs_reread_per_tick = median(read);
  out.keeper_eth_chainId_calls = proxy.counts.get("eth_chainId") ?? 0;

  // 4. A dead provider: it stops beating; ticks every second; unassigned at the first tick past its timeout.
  progress(`keepers [${elapsed()}]: a dead provider among 1000`);
  const dead = running[running.length - 1];
  const lastBeatAt = now;
  let unassignedAfter = NaN;
  for (let t = 0; t < 10 && Number.isNaN(unassignedAfter); t++) {
    now += TICK_MS;
    await beatJobs(keeper, new Set([dead.provider.toLowerCase()]));
    const tickStart = performance.now();
    r = await keeper.tick();
    const took = performance.now() - tickStart;
    // In real time the tick's own duration is added on top of the clock the decision saw.
    if (
      r.sent.some(
        (s) => s.decision.jobId === dead.jobId && s.decision.action === "unassign" && s.outcome.kind === "confirmed",
      )
    ) {
      unassignedAfter = (now - lastBeatAt + took) / 1000;
    }
  }
  out.keeper_dead_provider_unassigned_s = round(unassignedAfter, 2);
  out.keeper_heartbeat_timeout_s = TIMEOUT_MS / 1000;
  // The whole process: the in-process chain (EDR) and Hardhat included; the keeper's own share is the heap growth.
  out.keeper_rss_mb_1000_jobs = round(rssMb());
  global.gc?.();
  out.keeper_heap_growth_mb_1000_jobs = round((process.memoryUsage().heapUsed - heapBefore) / 2 ** 20);

  // 5. One signed heartbeat checked as the HTTP handler does (signature recovery + registry lookup).
  const w = Wallet.createRandom();
  const beats = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      signHeartbeat(w as never, {
        chainId: chainId.toString(),
        escrow: addresses.escrow,
        machine: machineId(),
        provider: w.address,
        jobId: "0",
        epoch: "0",
        step: 0,
        sentAt: now + i,
      }),
    ),
  );
  keeper.chain.registered.add(w.address);
  const hbStart = performance.now();
  for (const b of beats) await keeper.book.receive(b, now + 200);
  out.keeper_heartbeat_check_ms = round((performance.now() - hbStart) / beats.length, 2);

  // 6. Settling: every job trained (one checkpoint each), verdicts in; the finalizer runs once the windows end.
  Object.assign(
    out,
    await benchSettle({
      ethers,
      networkHelpers,
      escrow,
      v1,
      v2,
      safe: addresses.verifierSafe,
      chainId,
      ctx,
      rpc: provider,
      running,
      progress,
      proxy,
    }),
  );

  await proxy.close();
  provider.destroy();
  void coordinatorSigner;
  return out;
}

type Connection = Awaited<ReturnType<typeof network.create>>;
type HardhatSigner = Awaited<ReturnType<Connection["ethers"]["getSigners"]>>[number];

interface SettleArgs {
  ethers: Connection["ethers"];
  networkHelpers: Connection["networkHelpers"];
  escrow: JobEscrow;
  v1: HardhatSigner;
  v2: HardhatSigner;
  safe: string;
  chainId: bigint;
  ctx: Awaited<ReturnType<typeof keeperContext>>;
  rpc: JsonRpcProvider;
  running: { jobId: bigint; epoch: bigint; provider: string }[];
  progress: Progress;
  proxy: Awaited<ReturnType<typeof countingProxy>>;
}

async function benchSettle(a: SettleArgs): Promise<Record<string, number>> {
  const { ethers, networkHelpers, escrow, chainId, safe } = a;
  const jobs = a.running.slice(0, Number(process.env.BENCH_KEEPER_SETTLE_JOBS ?? a.running.length));
  a.progress(`keepers [${elapsed()}]: training ${jobs.length} jobs to a verdict (one checkpoint each)`);
  const domain = escrowDomain(chainId, await escrow.getAddress());
  const sign = async (digest: string) =>
    packSafeSignatures(
      await Promise.all(
        [a.v1, a.v2].map(async (v) => ({
          signer: v.address,
          signature: await signAsSafeOwner(v, chainId, safe, digest),
        })),
      ),
    );
  let trained = 0;
  for (const { jobId } of jobs) {
    const now = await escrow.jobOf(jobId); // the dead provider's job has a new epoch (or none) by now
    if (now.provider === ethers.ZeroAddress) continue;
    const j = { jobId, epoch: now.epoch, provider: now.provider };
    trained++;
    const hash = ethers.id(`bench:${j.jobId}`);
    const p = await ethers.getImpersonatedSigner(j.provider);
    await escrow.connect(p).reportCheckpoint(j.jobId, j.epoch, 10, hash);
    const acc = checkpointDecisionDigest(domain, {
      jobId: j.jobId,
      epoch: j.epoch,
      step: 10,
      checkpointHash: hash,
      accept: true,
    });
    await escrow.acceptCheckpoint(j.jobId, j.epoch, 10, hash, await sign(acc));
    const vd = verdictDigest(domain, { jobId: j.jobId, modelHash: hash, metric: 9_700n, passed: true });
    await escrow.submitVerdict(j.jobId, hash, 9_700n, true, await sign(vd));
  }
  const finalizer = createFinalizer(a.ctx, { fromBlock: 0 });
  await finalizer.tick(); // the first run reads every job once; none settleable yet
  a.proxy.reset();
  const quiet = performance.now();
  await finalizer.tick();
  const quietMs = performance.now() - quiet;
  const quietCalls = a.proxy.total();
  // Blocks every second from here on, as on a real chain; the windows (1 h) end together.
  await networkHelpers.time.increase(3_601);
  const settleableBlock = await ethers.provider.getBlockNumber();
  await networkHelpers.mine(); // the first block in which every job is Settleable
  await a.rpc.send("evm_setAutomine", [false]);
  await a.rpc.send("evm_setIntervalMining", [1_000]);
  a.progress(`keepers [${elapsed()}]: finalizer settling ${jobs.length} jobs (1 s blocks)`);
  const started = performance.now();
  const r = await finalizer.tick();
  const tickMs = performance.now() - started;
  await a.rpc.send("evm_setIntervalMining", [0]);
  await a.rpc.send("evm_setAutomine", [true]);
  const settledIn = await Promise.all(
    r.sent
      .filter((s) => s.action.method === "settle" && s.outcome.kind === "confirmed")
      .map((s) => (s.outcome as { block: number }).block),
  );
  const worst = settledIn.length ? Math.max(...settledIn) - (settleableBlock + 1) : NaN;
  return {
    keeper_finalizer_quiet_tick_ms_1000_jobs: round(quietMs),
    keeper_finalizer_rpc_calls_quiet_tick: quietCalls,
    keeper_settle_candidates: trained,
    keeper_settled_jobs: settledIn.length,
    keeper_settle_worst_blocks_after_settleable: worst,
    keeper_finalizer_settle_tick_s: round(tickMs / 1000, 1),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchKeepers((l) => process.stderr.write(`[bench] ${l}\n`))))
    console.log(`${k}: ${v}`);
  process.exit(0);
}
