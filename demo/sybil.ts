/**
 * The Sybil run ("one cheap identity starves a job"): a real local network — Hardhat node, Ignition
 * deployment, the keepers (`gpuchain keeper all`), three verifiers and one honest provider agent, each its own
 * process — plus N idle identities written here with plain ethers, not the project's agent: each registers at
 * price 1 with the largest memory, deposits stake, and for the job it holds sends signed heartbeats (step never
 * moving) and on-chain `heartbeat` calls, never training. One job of the small template is posted; the run
 * follows it to settlement and reports who held it, who earned what, and how long the job took.
 * Used by test/e2e/sybil.ts and bench/sybil.ts.
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { hexlify, randomBytes, Wallet, type JsonRpcProvider } from "ethers";
import { connectChecked, connectProtocol, type Protocol } from "../sdk/node/contracts.ts";
import { loadDeployment } from "../sdk/node/deployment.ts";
import { heartbeatMessage, type Heartbeat } from "../sdk/rules/heartbeat.ts";
import { JobStatus } from "../sdk/rules/job.ts";
import { writeKey, loadKey } from "../sdk/run/keys.ts";
import { machineId } from "../sdk/run/machine.ts";
import { sleep } from "../sdk/run/retry.ts";
import { loadTemplate } from "../workloads/index.ts";
import { budgetOf, demoProviderEnv, DISPUTE_WINDOW, postJob as postScenarioJob } from "./actors.ts";
import { freePort } from "./chain.ts";
import { localNetwork, type ScenarioNetwork } from "./network.ts";
import { ProcessGroup } from "./processes.ts";
import { runStore, type RunStore } from "./s3.ts";

export interface SybilOptions {
  /** Idle identities (0: the honest provider alone, the baseline). */
  idle: number;
  totalSteps: number;
  checkpointInterval: number;
  runDir: string;
  deploymentId: string;
  /** Extra coordinator flags, e.g. ["--start-grace-ms", "4000", "--progress-floor-ms", "3000"]. */
  coordinatorFlags: string[];
  /**
   * The escrow's lease, seconds (ignition/parameters/local.json's 120 unless set). A newcomer's stalled hold ends
   * at its job's progress timeout (at least one lease), when the contract forfeits its lock: a short lease keeps
   * N identities' holds inside a test's time.
   */
  leaseSeconds?: number;
  timeoutMs: number;
  note?: (line: string) => void;
  /** Pass every child's lines to `note`. */
  verbose?: boolean;
  /**
   * Give the honest provider a track record first: one job of one checkpoint, trained by it alone before the idle
   * identities register (the network most jobs meet: a provider that has delivered before).
   */
  provenHonest?: boolean;
  /**
   * Junk-reporting identities instead of idle ones: for the job it holds each beats a rising step and reports a
   * random hash (no blobs) once per hold, so it is never "idle" by the old rule; the verifiers refuse it.
   */
  junk?: boolean;
}

export interface SybilResult {
  /** Wall seconds from the job's creation to its verdict. */
  jobSeconds: number;
  settled: boolean;
  honest: string;
  idle: string[];
  /** Every ProviderAssigned of the job, in order. */
  assignments: string[];
  /** Every ProviderUnassigned of the job, in order: who, why (IJobEscrow.UnassignReason), held how long (chain s). */
  unassignments: { provider: string; reason: number; heldSeconds: number }[];
  /** Test USDC credited per provider (CheckpointAccepted), lower-case address → amount. */
  earned: Map<string, bigint>;
  /** Stake locks forfeited to the client per provider (HoldForfeited: holds on probation), lower-case → amount. */
  forfeited: Map<string, bigint>;
  stepsAccepted: number;
}

const TEMPLATE = "blobs-tiny";
const IDLE_PRICE = 1n;
const HONEST_PRICE = "0.0010"; // USDC per step
const IDLE_STAKE = 5_000_000n; // 5 test USDC: five network-minimum locks
const BEAT_MS = 500;
/** A proven arithmetic profile (workloads/profile.ts), claimed: nothing stops an identity from naming one. */
const CLAIMED_PROFILE = "onnxruntime-1.30.0/cpu/x86_64-avx2-fma";
const CHAIN_BEAT_MS = 3_000;

export async function runSybil(o: SybilOptions): Promise<SybilResult> {
  const note = o.note ?? (() => {});
  rmSync(o.runDir, { recursive: true, force: true });
  mkdirSync(o.runDir, { recursive: true });
  const lines: string[] = [];
  const group = new ProcessGroup((name, line) => {
    lines.push(`[${name}] ${line}`);
    if (o.verbose) note(`[${name}] ${line}`);
    if (lines.length > 2_000) lines.shift();
  });
  const stop = new AbortController();
  let provider: JsonRpcProvider | undefined;
  let storage: RunStore | undefined;
  const loops: Promise<void>[] = [];
  try {
    // A port of its own (not 8545 if free): other runs on this machine may start a node at the same moment.
    const net = await localNetwork(group, { ...o, port: await freePort(0) }, note);
    storage = await runStore(o.runDir);
    const deployment = loadDeployment(net.deploymentFile);
    provider = (await connectChecked(net.rpc, deployment, 30_000, 250)).provider;
    const protocol = connectProtocol(deployment, provider);
    const template = loadTemplate(TEMPLATE);
    await net.approveTemplate(protocol, provider, template.templateId);
    const coordinatorUrl = await startOffChain(o, net, storage, group);
    const honestKey = path.join(o.runDir, "keys", "honest.key");
    const honest = Wallet.createRandom();
    writeKey(honestKey, honest.privateKey);
    await net.fundGas(provider, honest.address, note);
    startHonest(o, net, storage, group, honestKey, coordinatorUrl);
    const client = loadKey(net.keyFiles.client).connect(provider);
    if (o.provenHonest) {
      await waitFor(() => isStaked(protocol, honest.address), 120_000, "the honest provider to register and stake");
      const warm = { ...o, totalSteps: o.checkpointInterval };
      await net.fundClient(protocol, client, budgetOf(warm.totalSteps));
      const first = await postScenarioJob(protocol, client, template.templateId, warm);
      note(`job ${first.jobId} posted first: the honest provider alone earns a track record on it …`);
      await waitForVerdict(protocol, first.jobId, first.block, o.timeoutMs, note);
    }
    note(`starting ${o.idle} idle identities (plain ethers, price ${IDLE_PRICE}, staked, heartbeating) …`);
    const idle: IdleIdentity[] = [];
    for (let i = 0; i < o.idle; i++) {
      const wallet = new Wallet(Wallet.createRandom().privateKey, provider);
      const id = new IdleIdentity(wallet, protocol, coordinatorUrl, o.junk === true);
      await net.fundGas(provider, id.address, note);
      await id.join(i);
      idle.push(id);
    }
    await waitFor(() => isStaked(protocol, honest.address), 120_000, "the honest provider to register and stake");
    for (const id of idle) loops.push(id.run(stop.signal));
    await sleep(2_000); // every identity's first beats reach the coordinator
    const { jobId, block } = await postJob(o, net, protocol, client, template.templateId);
    const t0 = performance.now();
    for (const id of idle) id.jobId = jobId;
    note(`job ${jobId} posted: ${o.totalSteps} steps of ${TEMPLATE}, checkpoint every ${o.checkpointInterval}`);
    const verdictAt = await waitForVerdict(protocol, jobId, block, o.timeoutMs, note);
    const jobSeconds = (verdictAt - t0) / 1000;
    await net.passTime(provider, DISPUTE_WINDOW + 1, note);
    const settled = await waitFor(
      async () => Number(await protocol.escrow.statusOf(jobId)) === JobStatus.Settled,
      60_000,
      "",
    )
      .then(() => true)
      .catch(() => false);
    return {
      ...(await books(protocol, jobId, block)),
      jobSeconds,
      settled,
      honest: honest.address,
      idle: idle.map((i) => i.address),
    };
  } catch (err) {
    // The children's last lines say why a run failed; the error alone rarely does.
    for (const l of lines.slice(-40)) note(l);
    throw err;
  } finally {
    stop.abort();
    await Promise.allSettled(loops);
    await group.stopAll(5_000, ["chain"]);
    await storage?.close();
    provider?.destroy();
    rmSync(path.join("ignition", "deployments", o.deploymentId), { recursive: true, force: true });
  }
}

/** The keepers in one process, with the coordinator flags of this run, and three verifiers. */
async function startOffChain(o: SybilOptions, net: ScenarioNetwork, storage: RunStore, group: ProcessGroup) {
  const ports = { coordinator: await freePort(0), collector: await freePort(0) };
  const common = ["--rpc", net.rpc, "--deployment", net.deploymentFile];
  const collectorUrl = `http://127.0.0.1:${ports.collector}`;
  group.start("keepers", [
    ...["cli/gpuchain.ts", "keeper", "all", ...common, "--key", net.keyFiles.coordinator],
    ...["--coordinator-port", String(ports.coordinator), "--collector-port", String(ports.collector)],
    ...["--state-file", path.join(o.runDir, "collector-state.json"), ...o.coordinatorFlags],
  ]);
  for (const i of [1, 2, 3]) {
    const key = net.keyFiles[`verifier${i}` as "verifier1"];
    const decisions = path.join(o.runDir, `verifier${i}-decisions.json`);
    group.start(
      `verifier${i}`,
      [
        ...["cli/gpuchain.ts", "verify", ...common, "--key", key, "--store", storage.url],
        ...["--collector", collectorUrl, "--decisions", decisions],
      ],
      storage.env,
    );
  }
  return `http://127.0.0.1:${ports.coordinator}/heartbeat`;
}

function startHonest(
  o: SybilOptions,
  net: ScenarioNetwork,
  storage: RunStore,
  group: ProcessGroup,
  keyFile: string,
  coordinatorUrl: string,
) {
  const common = ["--rpc", net.rpc, "--deployment", net.deploymentFile];
  group.start(
    "honest",
    [
      ...[
        "cli/gpuchain.ts",
        "provide",
        ...common,
        "--json",
        "--name",
        "honest",
        "--price",
        HONEST_PRICE,
        "--key",
        keyFile,
      ],
      ...["--store", storage.url, "--coordinator", coordinatorUrl],
    ],
    demoProviderEnv(storage.env),
  );
}

/**
 * One idle identity, plain ethers: registered at price 1 with the largest memory, staked, heartbeating — off
 * chain every BEAT_MS for the job it holds (its step never moves), on chain every CHAIN_BEAT_MS while it holds
 * it — and never training.
 */
class IdleIdentity {
  readonly wallet: Wallet;
  readonly address: string;
  jobId = 0n;
  private readonly protocol: Protocol;
  private readonly url: string;
  private readonly chainId: Promise<bigint>;
  private lastChainBeat = 0;
  private readonly junk: boolean;
  /** Junk mode: the epoch it last reported in (one report per hold). */
  private reportedEpoch = 0n;
  lastError: string | undefined;

  constructor(wallet: Wallet, protocol: Protocol, url: string, junk = false) {
    this.wallet = wallet;
    this.junk = junk;
    this.address = wallet.address;
    this.protocol = protocol;
    this.url = url;
    this.chainId = wallet.provider!.getNetwork().then((n) => n.chainId);
  }

  async join(i: number): Promise<void> {
    const { usdc, registry } = this.protocol;
    const registryAddress = await registry.getAddress();
    await (await usdc.connect(this.wallet).mint(this.address, IDLE_STAKE)).wait();
    await (await usdc.connect(this.wallet).approve(registryAddress, IDLE_STAKE)).wait();
    await (await registry.connect(this.wallet).register(`idle-${i}`, IDLE_PRICE, 1, "NVIDIA H200", 143_771)).wait();
    await (await registry.connect(this.wallet).depositStake(IDLE_STAKE)).wait();
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      // A refused beat or a reverted heartbeat: beat again next time.
      await this.once().catch((e: Error) => (this.lastError = e.message));
      await sleep(BEAT_MS, signal).catch(() => {});
    }
  }

  private async once(): Promise<void> {
    const job = this.jobId ? await this.protocol.escrow.jobOf(this.jobId) : undefined;
    const holds = job !== undefined && job.provider === this.address;
    const beat: Heartbeat = {
      chainId: (await this.chainId).toString(),
      escrow: await this.protocol.escrow.getAddress(),
      provider: this.address,
      jobId: holds ? this.jobId.toString() : "0",
      epoch: holds ? job.epoch.toString() : "0",
      // Junk mode claims a step one past the accepted one, as a trainer's first beat would.
      step: holds ? Number(job.acceptedStep) + (this.junk ? 1 : 0) : 0,
      sentAt: Date.now(),
      machine: machineId(),
      profile: CLAIMED_PROFILE,
    };
    const signature = await this.wallet.signMessage(heartbeatMessage(beat));
    const res = await fetch(this.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...beat, signature }),
      signal: AbortSignal.timeout(2_000),
    });
    if (!res.ok) throw new Error(`coordinator answered ${res.status}: ${await res.text()}`);
    if (holds && this.junk && this.reportedEpoch !== job.epoch) {
      this.reportedEpoch = job.epoch;
      const step = Math.min(Number(job.acceptedStep) + Number(job.checkpointInterval), Number(job.totalSteps));
      const junk = hexlify(randomBytes(32));
      await (
        await this.protocol.escrow.connect(this.wallet).reportCheckpoint(this.jobId, job.epoch, step, junk)
      ).wait();
    }
    if (holds && Date.now() - this.lastChainBeat >= CHAIN_BEAT_MS) {
      this.lastChainBeat = Date.now();
      await (await this.protocol.escrow.connect(this.wallet).heartbeat(this.jobId, job.epoch)).wait();
    }
  }
}

async function isStaked(protocol: Protocol, address: string): Promise<boolean> {
  return (await protocol.registry.isActive(address)) && (await protocol.registry.stakeOf(address)).deposited > 0n;
}

/** Funds the client and posts the run's one job, the way the demo's clients do (demo/actors.ts). */
async function postJob(o: SybilOptions, net: ScenarioNetwork, protocol: Protocol, client: Wallet, templateId: string) {
  await net.fundClient(protocol, client, budgetOf(o.totalSteps));
  return postScenarioJob(protocol, client, templateId, o);
}

/** Polls the job's events until its verdict; notes each assignment as it happens. Returns when (performance.now). */
async function waitForVerdict(
  protocol: Protocol,
  jobId: bigint,
  fromBlock: number,
  timeoutMs: number,
  note: (l: string) => void,
): Promise<number> {
  const { escrow } = protocol;
  const deadline = Date.now() + timeoutMs;
  let seen = 0;
  while (Date.now() < deadline) {
    const assigned = await escrow.queryFilter(escrow.filters.ProviderAssigned(jobId), fromBlock);
    for (const e of assigned.slice(seen)) note(`job ${jobId} assigned to ${e.args.provider} (epoch ${e.args.epoch})`);
    seen = assigned.length;
    if ((await escrow.queryFilter(escrow.filters.VerdictSubmitted(jobId), fromBlock)).length > 0) {
      return performance.now();
    }
    await sleep(250);
  }
  const job = await escrow.jobOf(jobId);
  throw new Error(`no verdict for job ${jobId} within ${timeoutMs / 1000} s (accepted step ${job.acceptedStep})`);
}

async function books(protocol: Protocol, jobId: bigint, fromBlock: number) {
  const { escrow } = protocol;
  const assigned = await escrow.queryFilter(escrow.filters.ProviderAssigned(jobId), fromBlock);
  const accepted = await escrow.queryFilter(escrow.filters.CheckpointAccepted(jobId), fromBlock);
  const earned = new Map<string, bigint>();
  let stepsAccepted = 0;
  for (const e of accepted) {
    const who = e.args.provider.toLowerCase();
    earned.set(who, (earned.get(who) ?? 0n) + e.args.amount);
    stepsAccepted += Number(e.args.stepsCredited);
  }
  const forfeited = new Map<string, bigint>();
  for (const e of await escrow.queryFilter(escrow.filters.HoldForfeited(jobId), fromBlock)) {
    const who = e.args.provider.toLowerCase();
    forfeited.set(who, (forfeited.get(who) ?? 0n) + e.args.amount);
  }
  const unassigned = await escrow.queryFilter(escrow.filters.ProviderUnassigned(jobId), fromBlock);
  const time = async (block: number) => (await escrow.runner!.provider!.getBlock(block))!.timestamp;
  const unassignments = [];
  for (const e of unassigned) {
    // The assignment it ends: the one whose epoch is the unassignment's new epoch − 1.
    const start = assigned.find((a) => a.args.epoch === e.args.newEpoch - 1n)!;
    const heldSeconds = (await time(e.blockNumber)) - (await time(start.blockNumber));
    unassignments.push({ provider: e.args.provider, reason: Number(e.args.reason), heldSeconds });
  }
  return { assignments: assigned.map((e) => e.args.provider), unassignments, earned, forfeited, stepsAccepted };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}
