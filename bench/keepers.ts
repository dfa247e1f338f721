/**
 * Keepers at scale: 1,000 concurrent jobs and 1,000 providers on Hardhat's in-process simulated chain (EDR), served
 * over HTTP by a counting JSON-RPC proxy in this process, so the keepers talk to it exactly as to a node (ethers
 * JsonRpcProvider, sdk/node/contracts.ts `rpcProvider`) and every request they send is counted.
 *
 * Setup (not counted) goes through the in-process connection, many transactions per block (`inBulk`): creating the
 * jobs, registering and staking the providers, the 900 assignments after the measured tick that decided them, and
 * training every job to a verdict. Heartbeats are put straight into the coordinator's book (1,000 signed beats a
 * second would measure secp256k1 in JS, not the tick); the check of one signed beat is measured on its own
 * (`keeper_heartbeat_check_ms`). Run alone: `node bench/keepers.ts` (BENCH_KEEPER_JOBS / _PROVIDERS to scale it).
 */
import { createServer, type Server } from "node:http";
import { network } from "hardhat";
import { HDNodeWallet, Wallet, type JsonRpcProvider } from "ethers";
import type { JobEscrow } from "../types/ethers-contracts/index.ts";
import GPUChainLocal from "../ignition/modules/GPUChainLocal.ts";
import { TEST_KEYS } from "../demo/chain.ts";
import { coordinatorConfig } from "../keepers/coordinator/config.ts";
import { createCoordinator, type Coordinator } from "../keepers/coordinator/tick.ts";
import { finalizerConfig } from "../keepers/finalizer/config.ts";
import { createFinalizer, runFinalizer } from "../keepers/finalizer/tick.ts";
import { keeperContext } from "../keepers/context.ts";
import { rpcProvider } from "../sdk/node/contracts.ts";
import { createLogger } from "../sdk/run/log.ts";
import { signHeartbeat } from "../sdk/rules/heartbeat.ts";
import { machineId } from "../sdk/run/machine.ts";
import {
  checkpointDecisionDigest,
  escrowDomain,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../sdk/rules/verifierSignatures.ts";

/** Hardhat's default accounts. */
const MNEMONIC = "test test test test test test test test test test test junk";
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
/**
 * CPU ms (user + system, every thread of this process: the keeper's JS and the in-process chain answering it) used
 * by `fn`: on a machine shared with other test suites, wall time measures the machine's load; this is the work.
 */
async function cpuOf<T>(fn: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const before = process.cpuUsage();
  const value = await fn();
  const used = process.cpuUsage(before);
  return { value, cpuMs: (used.user + used.system) / 1000 };
}

type Connection = Awaited<ReturnType<typeof network.create>>;
type HardhatSigner = Awaited<ReturnType<Connection["ethers"]["getSigners"]>>[number];
/** Overrides for one bulk transaction from `from`: its nonce, a fixed gas limit and fees (nothing asked per send). */
type Bulk = (from: { address: string }) => Promise<{
  nonce: number;
  gasLimit: number;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}>;

/**
 * Sends many transactions into the mempool (automine off), then mines until it is empty: a few hundred per block
 * instead of one block each. Each send carries its nonce, gas limit and fees (`Bulk`): asked for them, the node
 * would rebuild its pending block per request (≈ 300 ms a send at a few hundred pending, against ≈ 6 ms).
 * Fees well above the base fee, which full blocks push up.
 */
async function inBulk(c: Connection, send: (o: Bulk) => Promise<void>): Promise<void> {
  const nonces = new Map<string, number>();
  const o: Bulk = async ({ address }) => {
    const n = nonces.get(address) ?? (await c.ethers.provider.getTransactionCount(address, "latest"));
    nonces.set(address, n + 1);
    return { nonce: n, gasLimit: 900_000, maxFeePerGas: 10n ** 12n, maxPriorityFeePerGas: 10n ** 9n };
  };
  await c.ethers.provider.send("evm_setAutomine", [false]);
  await send(o);
  for (let blocks = 0; ; blocks++) {
    const pending = await c.ethers.provider.send("eth_getBlockByNumber", ["pending", false]);
    if (pending.transactions.length === 0) break;
    if (blocks > 10_000) throw new Error("bench setup: the mempool does not drain");
    await c.networkHelpers.mine();
  }
  await c.ethers.provider.send("evm_setAutomine", [true]);
}

export async function benchKeepers(progress: Progress = () => {}): Promise<Record<string, number>> {
  const connection = await network.create();
  const { ethers, ignition, networkHelpers } = connection;
  const [owner, coordinatorSigner, , v1, v2, , , client] = await ethers.getSigners();
  // Setting up 1,000 jobs takes chain time: a day-long lease keeps the steady ticks steady.
  const d = await ignition.deploy(GPUChainLocal, { parameters: { GPUChainLocal: { leaseDurationSeconds: 86_400 } } });
  const escrow = (await ethers.getContractAt("JobEscrow", await d.escrow.getAddress())) as unknown as JobEscrow;
  const usdc = await ethers.getContractAt("TestUSDC", await d.usdc.getAddress());
  const registry = await ethers.getContractAt("ProviderRegistry", await d.registry.getAddress());
  const template = ethers.id("bench-keepers-template");
  await escrow.connect(owner).setTemplateApproval(template, true);
  await usdc.mint(client.address, 10n ** 15n);
  await usdc.connect(client).approve(await escrow.getAddress(), ethers.MaxUint256);

  progress(`keepers [${elapsed()}]: creating ${JOBS} jobs and registering ${PROVIDERS} providers (bulk blocks)`);
  const request = {
    templateId: template,
    totalSteps: 10,
    checkpointInterval: 10,
    maxPricePerStep: 1_000n,
    budget: 100_000n,
    disputeWindow: 3_600n,
  };
  await inBulk(connection, async (o) => {
    for (let i = 0; i < JOBS; i++) await escrow.connect(client).createJob(request, await o(client));
  });
  const providers: string[] = [];
  for (let i = 0; i < PROVIDERS; i++)
    providers.push(ethers.getAddress(ethers.zeroPadValue(ethers.toBeHex(0x10000 + i), 20)));
  const signers = new Map<string, HardhatSigner>();
  for (const a of providers) {
    await networkHelpers.setBalance(a, 10n ** 21n);
    signers.set(a, await ethers.getImpersonatedSigner(a));
  }
  const registryAddress = await registry.getAddress();
  await inBulk(connection, async (o) => {
    for (const [i, a] of providers.entries()) {
      const signer = signers.get(a)!;
      await registry
        .connect(signer)
        .register(`p${i}`, BigInt(500 + (i % 400)), 1, "bench-gpu", 16_384, await o(signer));
      // Stake for a few jobs' locks (the escrow checks it on assign).
      await usdc.mint(a, 10n ** 8n, await o(owner));
      await usdc.connect(signer).approve(registryAddress, 10n ** 8n, await o(signer));
    }
  });
  await inBulk(connection, async (o) => {
    for (const a of providers) await registry.connect(signers.get(a)!).depositStake(10n ** 8n, await o({ address: a }));
  });
  if ((await escrow.jobCount()) !== BigInt(JOBS)) throw new Error("bench setup: not every createJob landed");
  const lastStake = await registry.stakeOf(providers.at(-1)!);
  if (lastStake.deposited !== 10n ** 8n) throw new Error("bench setup: not every provider staked");

  const proxy = await countingProxy(connection.provider as unknown as Eip1193);
  const provider = rpcProvider(proxy.url, 250) as JsonRpcProvider;
  const addresses = {
    escrow: await escrow.getAddress(),
    registry: registryAddress,
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
  const alive = Math.min(100, PROVIDERS);

  const beatIdle = (k: Coordinator, who: string[]) => {
    for (const a of who) k.book.lastBeat.set(a.toLowerCase(), { receivedAt: now, jobId: "0", epoch: "0" });
  };
  const beatJobs = (k: Coordinator, skip = new Set<string>()) => {
    for (const job of k.chain.jobs.values()) {
      if (job.status !== "Running" || skip.has(job.provider.toLowerCase())) continue;
      const addr = job.provider.toLowerCase();
      k.book.lastBeat.set(addr, { receivedAt: now, jobId: job.jobId.toString(), epoch: job.epoch.toString() });
      k.book.lastJobBeat.set(`${job.jobId}:${job.epoch}:${addr}`, now);
    }
  };

  // 1. A coordinator starting cold (nothing known) on every job Open, 100 providers alive, all registered.
  progress(`keepers [${elapsed()}]: first tick, ${JOBS} Open jobs, ${alive} providers alive`);
  beatIdle(keeper, providers.slice(0, alive));
  proxy.reset();
  // The first tick's read and decision; its sends follow in `tick`.
  const { value: first, cpuMs: firstCpu } = await cpuOf(() => keeper.plan());
  out.keeper_first_tick_ms_1000_jobs_100_providers = round(first.readMs + first.decideMs);
  out.keeper_first_tick_cpu_ms_1000_jobs_100_providers = round(firstCpu);
  out.keeper_first_tick_read_ms = round(first.readMs);
  out.keeper_first_tick_decide_ms = round(first.decideMs);
  out.keeper_first_tick_read_ms_logs = round(keeper.chain.last.ms!.logs);
  out.keeper_first_tick_read_ms_providers = round(keeper.chain.last.ms!.providers);
  out.keeper_first_tick_jobs_read = keeper.chain.last.jobsRead;
  out.keeper_first_tick_jobs_from_events = keeper.chain.last.jobsFromEvents ?? 0;
  out.keeper_first_tick_logs = keeper.chain.last.logs;
  out.keeper_rpc_calls_first_tick_1000_jobs = proxy.total();
  let r = await keeper.tick(); // nothing new on chain: decides the same, and sends the assignments
  out.keeper_assign_sends_100 = r.sent.filter((s) => s.outcome.kind === "confirmed").length;
  out.keeper_assign_send_ms_100 = round(r.timings.sendMs);

  // 2. The next tick: 100 jobs Running (their assignments re-read), 900 Open, the same 100 providers (all busy).
  now += TICK_MS;
  beatIdle(keeper, providers.slice(0, alive));
  beatJobs(keeper);
  proxy.reset();
  const second = await cpuOf(() => keeper.plan());
  out.keeper_tick_ms_1000_jobs_100_providers = round(second.value.readMs + second.value.decideMs);
  out.keeper_tick_cpu_ms_1000_jobs_100_providers = round(second.cpuMs);
  out.keeper_rpc_calls_tick_1000_jobs_100_providers = proxy.total();

  // 3. The other 900 providers come alive: a tick deciding 900 assignments among 900 candidates (read + decide;
  //    its sends are timed above per 100, ~1 min for 900, so the bench sends these in bulk itself).
  progress(`keepers [${elapsed()}]: ${PROVIDERS} providers alive, deciding the other ${JOBS - alive} jobs`);
  now += TICK_MS;
  beatIdle(keeper, providers.slice(alive));
  beatJobs(keeper);
  const { value: planned, cpuMs: plannedCpu } = await cpuOf(() => keeper.plan());
  out.keeper_tick_ms_1000_jobs_1000_providers = round(planned.readMs + planned.decideMs);
  out.keeper_tick_cpu_ms_1000_jobs_1000_providers = round(plannedCpu);
  out.keeper_tick_decide_ms_1000_jobs_1000_providers = round(planned.decideMs);
  const assigns = planned.decisions.filter((x) => x.action === "assign");
  out.keeper_assignments_decided_1000_providers = assigns.length;
  await inBulk(connection, async (o) => {
    for (const a of assigns)
      await escrow.connect(coordinatorSigner).assign(a.jobId, a.provider!, await o(coordinatorSigner));
  });
  now += TICK_MS;
  beatJobs(keeper);
  r = await keeper.tick(); // reads the assignments' events: every job Running now
  out.keeper_tick_ms_after_bulk_assignments = round(r.timings.readMs + r.timings.decideMs);
  beatJobs(keeper);

  // 4. Steady state: every job Running, every provider beating; 50 leases extended on chain between ticks.
  progress(`keepers [${elapsed()}]: steady ticks, ${JOBS} Running jobs, ${PROVIDERS} providers`);
  const running = [...keeper.chain.jobs.values()].filter((j) => j.status === "Running");
  out.keeper_running_jobs = running.length;
  const ticks: number[] = [];
  const calls: number[] = [];
  const reread: number[] = [];
  const cpu: number[] = [];
  for (let t = 0; t < 6; t++) {
    await inBulk(connection, async (o) => {
      for (const j of running.slice(t * 50, t * 50 + 50)) {
        await escrow.connect(signers.get(j.provider)!).heartbeat(j.jobId, j.epoch, await o({ address: j.provider }));
      }
    });
    now += TICK_MS;
    beatJobs(keeper);
    proxy.reset();
    const started = performance.now();
    cpu.push((await cpuOf(() => keeper.tick())).cpuMs);
    ticks.push(performance.now() - started);
    calls.push(proxy.total());
    reread.push(keeper.chain.last.jobsRead);
  }
  out.keeper_tick_ms_1000_jobs = round(median(ticks));
  out.keeper_tick_cpu_ms_1000_jobs = round(median(cpu));
  out.keeper_rpc_calls_per_tick_1000_jobs = median(calls);
  out.keeper_jobs_reread_per_tick = median(reread);
  out.keeper_eth_chainId_calls = proxy.counts.get("eth_chainId") ?? 0;

  // 5. A coordinator restarted in that steady state: every job Running, so every job is read (jobOf).
  const restarted = createCoordinator(ctx, config);
  beatIdle(restarted, providers);
  proxy.reset();
  const { value: cold, cpuMs: coldCpu } = await cpuOf(() => restarted.plan());
  out.keeper_first_tick_ms_1000_running_jobs_1000_providers = round(cold.readMs + cold.decideMs);
  out.keeper_first_tick_cpu_ms_1000_running_jobs_1000_providers = round(coldCpu);
  out.keeper_first_tick_read_ms_jobs_1000_running = round(restarted.chain.last.ms!.jobs);
  out.keeper_first_tick_read_ms_logs_1000_running = round(restarted.chain.last.ms!.logs);
  out.keeper_first_tick_read_ms_providers_1000_running = round(restarted.chain.last.ms!.providers);
  out.keeper_first_tick_decide_ms_1000_running = round(cold.decideMs);
  out.keeper_first_tick_logs_1000_running = restarted.chain.last.logs;
  // Of the read time, what the chain itself took to answer (summed over requests, which may overlap).
  out.keeper_first_tick_node_ms_eth_call_1000_running = round(proxy.millis.get("eth_call") ?? 0);
  out.keeper_first_tick_node_ms_eth_getLogs_1000_running = round(proxy.millis.get("eth_getLogs") ?? 0);
  out.keeper_first_tick_running_jobs_read = restarted.chain.last.jobsRead;
  out.keeper_rpc_calls_first_tick_1000_running = proxy.total();

  // 6. A dead provider: it stops beating; ticks every second; unassigned at the first tick past its timeout.
  progress(`keepers [${elapsed()}]: a dead provider among ${PROVIDERS}`);
  const dead = running[running.length - 1];
  // One spare provider, registered and staked now and beating idle: the freed job's next holder.
  const spare = ethers.getAddress(ethers.zeroPadValue(ethers.toBeHex(0x10000 + PROVIDERS), 20));
  await networkHelpers.setBalance(spare, 10n ** 21n);
  signers.set(spare, await ethers.getImpersonatedSigner(spare));
  await usdc.mint(spare, 10n ** 8n);
  await usdc.connect(signers.get(spare)!).approve(registryAddress, 10n ** 8n);
  await registry.connect(signers.get(spare)!).register("spare", 900n, 1, "bench-gpu", 16_384);
  await registry.connect(signers.get(spare)!).depositStake(10n ** 8n);
  const lastBeatAt = now;
  let unassignedAfter = NaN;
  let reassignedInTick = 0;
  let reassignedAfter = NaN;
  for (let t = 0; t < 10 && Number.isNaN(unassignedAfter); t++) {
    now += TICK_MS;
    beatJobs(keeper, new Set([dead.provider.toLowerCase()]));
    beatIdle(keeper, [spare]);
    const tickStart = performance.now();
    r = await keeper.tick();
    const took = performance.now() - tickStart;
    const sent = (action: string) =>
      r.sent.some(
        (s) => s.decision.jobId === dead.jobId && s.decision.action === action && s.outcome.kind === "confirmed",
      );
    // In real time the tick's own duration (read, decide, the unassign confirmed) comes on top of the clock.
    if (sent("unassign")) {
      unassignedAfter = now - lastBeatAt + took - r.timings.reassignMs;
      reassignedAfter = now - lastBeatAt + took;
      reassignedInTick = sent("assign") ? 1 : 0;
    }
  }
  out.keeper_dead_unassigned_ms = round(unassignedAfter, 0);
  // Failover in one tick: the same tick assigned the freed job to the spare once its unassign was mined.
  out.keeper_dead_reassigned_in_same_tick = reassignedInTick;
  out.keeper_dead_reassigned_ms = reassignedInTick ? round(reassignedAfter, 0) : NaN;
  // What the keeper adds to the timeout: the wait for the next tick and that tick's own time (read, decide, send).
  out.keeper_dead_unassigned_after_timeout_ms = round(unassignedAfter - TIMEOUT_MS, 0);
  out.keeper_heartbeat_timeout_ms = TIMEOUT_MS;
  // The whole process: the in-process chain (EDR) and Hardhat included; the keeper's own share is the heap growth.
  out.keeper_rss_mb_1000_jobs = round(rssMb());
  global.gc?.();
  out.keeper_heap_growth_mb_1000_jobs = round((process.memoryUsage().heapUsed - heapBefore) / 2 ** 20);

  // 7. One signed heartbeat checked as the HTTP handler does (signature recovery + registry lookup).
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

  // 8. Settling: every job trained (one checkpoint each), verdicts in; the finalizer watches the windows end.
  const settle = { connection, escrow, v1, v2, safe: addresses.verifierSafe, chainId, ctx, rpc: provider, signers };
  Object.assign(out, await benchSettle({ ...settle, progress, proxy }));

  await proxy.close();
  provider.destroy();
  return out;
}

interface SettleArgs {
  connection: Connection;
  escrow: JobEscrow;
  v1: HardhatSigner;
  v2: HardhatSigner;
  safe: string;
  chainId: bigint;
  ctx: Awaited<ReturnType<typeof keeperContext>>;
  rpc: JsonRpcProvider;
  signers: Map<string, HardhatSigner>;
  progress: Progress;
  proxy: Awaited<ReturnType<typeof countingProxy>>;
}

async function benchSettle(a: SettleArgs): Promise<Record<string, number>> {
  const { connection, escrow, chainId, safe } = a;
  const { ethers, networkHelpers } = connection;
  const count = Number(await escrow.jobCount());
  const jobs: { jobId: bigint; epoch: bigint; provider: string }[] = [];
  for (let id = 1n; id <= BigInt(count); id++) {
    const j = await escrow.jobOf(id); // a job without a provider (none took the dead one's) is left Open
    if (j.provider !== ethers.ZeroAddress) jobs.push({ jobId: id, epoch: j.epoch, provider: j.provider });
  }
  const settleJobs = jobs.slice(0, Number(process.env.BENCH_KEEPER_SETTLE_JOBS ?? jobs.length));
  a.progress(`keepers [${elapsed()}]: training ${settleJobs.length} jobs to a verdict (one checkpoint each, bulk)`);
  const domain = escrowDomain(chainId, await escrow.getAddress());
  // The verifiers' keys (Hardhat's default accounts 3 and 4), signing here rather than one RPC per signature.
  const keys = [3, 4].map((i) => HDNodeWallet.fromPhrase(MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`));
  if (keys[0].address !== a.v1.address || keys[1].address !== a.v2.address) throw new Error("bench: verifier keys");
  const sign = async (digest: string) =>
    packSafeSignatures(
      await Promise.all(
        keys.map(async (v) => ({ signer: v.address, signature: await signAsSafeOwner(v, chainId, safe, digest) })),
      ),
    );
  const hashOf = (id: bigint) => ethers.id(`bench:${id}`);
  await inBulk(connection, async (o) => {
    for (const j of settleJobs) {
      const p = a.signers.get(j.provider)!;
      await escrow.connect(p).reportCheckpoint(j.jobId, j.epoch, 10, hashOf(j.jobId), await o(p));
    }
  });
  const relayer = a.v1; // anyone may relay the verifiers' signatures
  await inBulk(connection, async (o) => {
    for (const j of settleJobs) {
      const h = hashOf(j.jobId);
      const decision = { jobId: j.jobId, epoch: j.epoch, step: 10, checkpointHash: h, accept: true };
      const sigs = await sign(checkpointDecisionDigest(domain, decision));
      await escrow.connect(relayer).acceptCheckpoint(j.jobId, j.epoch, 10, h, sigs, await o(relayer));
    }
  });
  await inBulk(connection, async (o) => {
    for (const j of settleJobs) {
      const h = hashOf(j.jobId);
      const sigs = await sign(verdictDigest(domain, { jobId: j.jobId, modelHash: h, metric: 9_700n, passed: true }));
      await escrow.connect(relayer).submitVerdict(j.jobId, h, 9_700n, true, sigs, await o(relayer));
    }
  });
  const verdicts = await escrow.queryFilter(escrow.filters.VerdictSubmitted());
  const deadlineOf = new Map(verdicts.map((e) => [e.args.jobId, e.args.disputeDeadline]));
  if (settleJobs.some((j) => !deadlineOf.has(j.jobId))) throw new Error("bench setup: not every verdict landed");
  const lastDeadline = [...deadlineOf.values()].reduce((x, y) => (x > y ? x : y));

  // The finalizer's own log lines, to show where the settling time goes (decision, each batch confirmed).
  const lines: { t: string; msg: string; method?: string; block?: number; calls?: number }[] = [];
  const logger = createLogger({ component: "finalizer", write: (l) => void lines.push(JSON.parse(l)) });
  const ctx = { ...a.ctx, logger };
  const finalizer = createFinalizer(ctx, { fromBlock: 0 });
  await finalizer.tick(); // the first run reads every job once; none settleable yet
  a.proxy.reset();
  const quiet = performance.now();
  await finalizer.tick();
  const quietMs = performance.now() - quiet;
  const quietCalls = a.proxy.total();

  // Blocks every second from here on, as on a real chain. Every window ends at once (the worst case): the next
  // block's time is past the last deadline, so it is the first in which every job is Settleable, and the finalizer
  // (watching from a block before every deadline) learns of it only from that block.
  a.progress(`keepers [${elapsed()}]: finalizer watching ${settleJobs.length} windows end at once (1 s blocks)`);
  await networkHelpers.time.setNextBlockTimestamp(lastDeadline + 1n);
  const controller = new AbortController();
  const config = finalizerConfig({ cron: "0 0 0 1 1 *", "watch-ms": "100" });
  const running = runFinalizer(ctx, config, controller.signal, finalizer);
  await a.rpc.send("evm_setAutomine", [false]);
  await a.rpc.send("evm_setIntervalMining", [1_000]);
  const started = performance.now();
  const settledBlock = new Map<bigint, number>();
  while (settledBlock.size < settleJobs.length && performance.now() - started < 120_000) {
    await new Promise((r) => setTimeout(r, 500));
    for (const e of await escrow.queryFilter(escrow.filters.JobSettled()))
      settledBlock.set(e.args.jobId, e.blockNumber);
  }
  const settleMs = performance.now() - started;
  controller.abort();
  await running;
  await a.rpc.send("evm_setIntervalMining", [0]);
  await a.rpc.send("evm_setAutomine", [true]);
  // Per job: blocks from the first block past its deadline to the block of its settle.
  let worst = 0;
  const tsCache = new Map<number, bigint>();
  const timeOf = async (n: number) => {
    if (!tsCache.has(n)) tsCache.set(n, BigInt((await ethers.provider.getBlock(n))!.timestamp));
    return tsCache.get(n)!;
  };
  for (const [jobId, block] of settledBlock) {
    let s = block;
    while (s > 0 && (await timeOf(s - 1)) > deadlineOf.get(jobId)!) s--;
    worst = Math.max(worst, block - s);
  }
  const settleBlocks = new Set(settledBlock.values());
  // Wall time from the bulk decision to each settle batch confirmed (the first block past the deadlines is mined
  // up to 1 s after the watch began; the decision follows it by at most a watch interval and one status scan).
  const decided = lines.find((l) => l.msg === "decision" && l.method === undefined && "jobs" in l);
  const batches = lines.filter((l) => l.msg === "sent" && l.method === "aggregate3");
  const sinceDecision = (l?: { t: string }) => (l && decided ? (Date.parse(l.t) - Date.parse(decided.t)) / 1000 : NaN);
  return {
    keeper_finalizer_quiet_tick_ms_1000_jobs: round(quietMs),
    keeper_finalizer_rpc_calls_quiet_tick: quietCalls,
    keeper_settle_candidates: settleJobs.length,
    keeper_settled_jobs: settledBlock.size,
    finalizer_settle_blocks: settledBlock.size === settleJobs.length ? worst : NaN,
    keeper_settle_blocks_used: settleBlocks.size,
    keeper_finalizer_settle_s: round(settleMs / 1000, 1),
    keeper_finalizer_first_batch_confirmed_s: round(sinceDecision(batches[0]), 2),
    keeper_finalizer_settles_confirmed_s: round(sinceDecision(batches[Math.ceil(settleJobs.length / 200) - 1]), 2),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchKeepers((l) => process.stderr.write(`[bench] ${l}\n`))))
    console.log(`${k}: ${v}`);
  process.exit(0);
}
