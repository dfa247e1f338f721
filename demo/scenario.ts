/**
 * The whole network on one machine, keeping its three promises in front of the user:
 * a job survives a provider killed mid-job (SIGKILL → failover from the last accepted checkpoint), a faulty
 * provider is refused by the Quality Guard, and the escrow pays each provider exactly for accepted steps.
 * Used by `npm start` (real MNIST template) and by the end-to-end test (a shorter configuration).
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { JsonRpcProvider, Wallet, type Log } from "ethers";
import { connectProtocol, JOB_STATUS, type Protocol } from "../sdk/contracts.ts";
import { loadDeployment, type Deployment } from "../sdk/deployment.ts";
import { loadKey, loadOrCreateKey } from "../sdk/keys.ts";
import { sleep } from "../sdk/retry.ts";
import { decodeCustomError } from "../sdk/errors.ts";
import { loadTemplate } from "../workloads/index.ts";
import { freePort } from "./chain.ts";
import { externalNetwork, localNetwork, type Role, type ScenarioNetwork } from "./network.ts";
import { ProcessGroup } from "./processes.ts";
import { Recorder } from "./recording.ts";
import { formatTable, formatUsdc, type PromiseCheck, type ProviderRow } from "./report.ts";
import { walletOf, type Ledger } from "../sdk/ledger.ts";
import { escrowLedger } from "../sdk/events.ts";
import { providerSummaries } from "../sdk/narrative.ts";
import { lastTrainedStep, renderChildLine } from "./render.ts";
import { startDashboardServer, type DashboardServer } from "../dashboard/server/server.ts"; // dashboard hook

export interface ScenarioOptions {
  template: string;
  totalSteps: number;
  checkpointInterval: number;
  dispute: boolean;
  /** Fault injected into mallory ("" for an honest mallory). */
  fault: string;
  /** Kill alice (SIGKILL) after her first accepted checkpoint. */
  kill: boolean;
  runDir: string;
  deploymentId: string;
  timeoutMs: number;
  print: (line: string) => void;
  /** Stops the run early (Ctrl-C). */
  signal?: AbortSignal;
  /** Run against an existing deployment instead of an embedded chain (see demo/network.ts). */
  external?: { rpc: string; deploymentFile: string; keysDir: string };
  /** Called after settlement, before the chain stops: lets a test inspect the live chain. */
  beforeStop?: (chain: { provider: JsonRpcProvider; protocol: Protocol; jobId: bigint; rpc: string; deploymentFile: string }) => Promise<void>;
}

export interface ScenarioResult {
  ok: boolean;
  checks: PromiseCheck[];
  failoverSeconds?: number;
  lostSteps?: number;
  accuracy?: number;
  /** Wall time from job creation to the verdict: what N steps cost through the whole network. */
  jobWallSeconds?: number;
  recording: string;
  jobId?: bigint;
  deployment?: Deployment;
}

const PRICE = { mallory: "0.0008", alice: "0.0010", bob: "0.0012" } as const; // USDC per step
const MAX_PRICE = 1_500n; // 0.0015 USDC per step, in base units
const DISPUTE_WINDOW = 60; // seconds: the escrow's minimum

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  pruneOldStores(path.dirname(o.runDir), o.runDir);
  rmSync(o.runDir, { recursive: true, force: true });
  mkdirSync(o.runDir, { recursive: true });
  const recorder = new Recorder(path.join(o.runDir, "recording.jsonl"));
  const note = (line: string) => {
    o.print(line);
    recorder.add("note", "start", line);
  };
  const group = new ProcessGroup((name, line, stream) => {
    if (isDecisionLine(name, line)) recorder.add("log", name, safeJson(line) ?? line);
    const shown = renderChildLine(name, line, stream);
    if (shown) note(shown);
  });
  let provider: JsonRpcProvider | undefined;
  let dashboard: DashboardServer | undefined; // dashboard hook
  try {
    const net = o.external
      ? externalNetwork(o.external.rpc, o.external.deploymentFile, o.external.keysDir)
      : await localNetwork(group, o.runDir, o.deploymentId, note);
    if (o.dispute && !net.canWaitDays) throw new Error("--dispute waits out the arbiter's 3 days: only on the local chain, whose clock can be advanced");
    const badges = [net.badge, "Synthetic (CPU workload standing in for a GPU)", "Capped profile (bob)", ...(o.fault ? ["Injected fault (mallory)"] : [])];
    recorder.add("badge", "start", badges);
    note(`badges: ${badges.map((b) => `[${b}]`).join(" ")}`);
    const { rpc, deploymentFile } = net;
    const deployment = loadDeployment(deploymentFile);
    provider = new JsonRpcProvider(rpc, undefined, { polling: true, pollingInterval: 250, cacheTimeout: -1 });
    const protocol = connectProtocol(deployment, provider);
    const template = loadTemplate(o.template);
    await net.approveTemplate(protocol, provider, template.templateId);
    note(`escrow ${deployment.escrow}; verifier Safe ${deployment.verifierSafe}; template ${template.descriptor.name} approved (${template.templateId.slice(0, 10)}…)`);

    const actors = await prepareActors(o, net, provider, protocol, note);
    const ports = { coordinator: await freePort(8600), collector: await freePort(8601) };
    // dashboard hook: served for the whole run (read-only), on a free port
    dashboard = await startDashboardServer({
      rpc, deploymentFile, note, port: await freePort(8700), store: path.join(o.runDir, "store"),
      coordinatorUrl: `http://127.0.0.1:${ports.coordinator}`, collectorUrl: `http://127.0.0.1:${ports.collector}`,
      extraRecordings: { "this-run.jsonl": recorder.file },
    });
    note(`dashboard: ${dashboard.url}`);
    startOffChain(group, o, rpc, deploymentFile, actors, ports);
    note("started: keepers (coordinator, verdict collector, finalizer, reserves watch), 3 verifiers, 3 providers");
    await waitFor(() => providersRegistered(protocol, actors.providers), 120_000, "providers to register", o.signal);
    await sleep(3_000, o.signal); // let every provider's first heartbeats reach the coordinator

    const jobId = await createJob(o, protocol, actors.client, template.templateId, deployment.escrow);
    note(`client posted job ${jobId}: ${o.totalSteps} steps of ${template.descriptor.name}, checkpoint every ${o.checkpointInterval}, budget ${formatUsdc(MAX_PRICE * BigInt(o.totalSteps))} USDC locked`);

    const watch = await watchJob(o, net, provider, protocol, group, recorder, note, jobId, actors);
    const result = await finish(o, provider, protocol, recorder, note, jobId, actors, watch, deployment);
    await o.beforeStop?.({ provider, protocol, jobId, rpc, deploymentFile });
    return result;
  } finally {
    await dashboard?.close(); // dashboard hook
    await group.stopAll(5_000, ["chain"]);
    provider?.destroy();
    await recorder.close();
    // The chain is gone with this run; its deployment journal would only mislead the next one.
    rmSync(path.join("ignition", "deployments", o.deploymentId), { recursive: true, force: true });
  }
}

interface Actors {
  client: Wallet;
  providers: { name: keyof typeof PRICE; wallet: Wallet; keyFile: string }[];
  keyFiles: Record<Role, string>;
}

async function prepareActors(o: ScenarioOptions, net: ScenarioNetwork, provider: JsonRpcProvider, protocol: Protocol, note: (l: string) => void): Promise<Actors> {
  const client = loadKey(net.keyFiles.client).connect(provider);
  await net.fundClient(protocol, client, MAX_PRICE * BigInt(o.totalSteps) + (await protocol.escrow.disputeBond()));
  const providers = (["mallory", "alice", "bob"] as const).map((name) => {
    const keyFile = path.join(o.runDir, "providers", name, "key");
    return { name, keyFile, wallet: loadOrCreateKey(keyFile, true).wallet.connect(provider) };
  });
  for (const p of providers) await net.fundGas(provider, p.wallet.address, note);
  return { client, providers, keyFiles: net.keyFiles };
}

function startOffChain(
  group: ProcessGroup,
  o: ScenarioOptions,
  rpc: string,
  deployment: string,
  actors: Actors,
  ports: { coordinator: number; collector: number },
) {
  const cli = "cli/gpuchain.ts";
  const store = path.join(o.runDir, "store");
  const common = ["--rpc", rpc, "--deployment", deployment];
  const coordinatorUrl = `http://127.0.0.1:${ports.coordinator}/heartbeat`;
  const collectorUrl = `http://127.0.0.1:${ports.collector}`;
  group.start("keepers", [
    cli, "keeper", "all", ...common,
    "--key", actors.keyFiles.coordinator,
    "--coordinator-port", String(ports.coordinator),
    "--collector-port", String(ports.collector),
    "--state-file", path.join(o.runDir, "collector-state.json"),
  ]);
  for (const i of [1, 2, 3]) {
    const decisions = path.join(o.runDir, `verifier${i}-decisions.json`);
    group.start(`verifier${i}`, [cli, "verify", ...common, "--key", actors.keyFiles[`verifier${i}` as Role], "--store", store, "--collector", collectorUrl, "--decisions", decisions]);
  }
  for (const p of actors.providers) {
    const extra = p.name === "bob" ? ["--memory-cap", "2"] : p.name === "mallory" && o.fault ? ["--fault", o.fault] : [];
    group.start(p.name, [cli, "provide", ...common, "--name", p.name, "--price", PRICE[p.name], "--key", p.keyFile, "--store", store, "--coordinator", coordinatorUrl, ...extra]);
  }
}

async function providersRegistered(protocol: Protocol, providers: Actors["providers"]): Promise<boolean> {
  const records = await Promise.all(providers.map((p) => protocol.registry.isActive(p.wallet.address)));
  return records.every(Boolean);
}

async function createJob(o: ScenarioOptions, protocol: Protocol, client: Wallet, templateId: string, escrow: string): Promise<bigint> {
  const budget = MAX_PRICE * BigInt(o.totalSteps);
  const usdc = protocol.usdc.connect(client);
  await (await usdc.approve(escrow, budget)).wait();
  const receipt = await (
    await protocol.escrow.connect(client).createJob({
      templateId,
      totalSteps: o.totalSteps,
      checkpointInterval: o.checkpointInterval,
      maxPricePerStep: MAX_PRICE,
      budget,
      disputeWindow: DISPUTE_WINDOW,
    })
  ).wait();
  const created = receipt!.logs.map((l) => protocol.escrow.interface.parseLog(l)).find((e) => e?.name === "JobCreated");
  return created!.args.jobId as bigint;
}

interface LiveEvent {
  name: string;
  args: Record<string, unknown>;
  blockNumber: number;
}

interface WatchResult {
  events: LiveEvent[];
  failoverSeconds?: number;
  lostSteps?: number;
  jobWallSeconds?: number;
}

/** Follows the job's events until it settles; kills alice after her first accepted checkpoint. */
async function watchJob(
  o: ScenarioOptions,
  net: ScenarioNetwork,
  provider: JsonRpcProvider,
  protocol: Protocol,
  group: ProcessGroup,
  recorder: Recorder,
  note: (line: string) => void,
  jobId: bigint,
  actors: Actors,
): Promise<WatchResult> {
  const names = nameBook(actors);
  const events: LiveEvent[] = [];
  const result: WatchResult = { events };
  const alice = actors.providers.find((p) => p.name === "alice")!.wallet.address.toLowerCase();
  let killedAt: number | undefined;
  let fromBlock = 0;
  let timeAdvanced = false;
  const startedAt = Date.now();
  let lastMetricAt = 0;
  const deadline = Date.now() + o.timeoutMs;
  while (Date.now() < deadline) {
    if (o.signal?.aborted) throw new Error("stopped by the user");
    const head = await provider.getBlockNumber();
    const logs = await provider.getLogs({ address: await protocol.escrow.getAddress(), fromBlock, toBlock: head });
    fromBlock = head + 1;
    for (const log of logs) {
      const e = decode(protocol, log);
      if (!e) continue;
      events.push(e);
      recorder.add("event", "chain", e);
      if (e.args.jobId === undefined || BigInt(e.args.jobId as bigint) !== jobId) continue; // set-up events
      note(describeEvent(e, names));
      const byAlice = String(e.args.provider).toLowerCase() === alice;
      if (e.name === "CheckpointAccepted" && byAlice && killedAt === undefined && o.kill) {
        await group.kill("alice", "SIGKILL");
        killedAt = Date.now();
        note(`>>> killed alice (SIGKILL) after her checkpoint at step ${e.args.step} was accepted; she had trained to step ${lastTrainedStep("alice") ?? "?"}`);
      } else if (e.name === "ProviderAssigned" && killedAt !== undefined && result.lostSteps === undefined) {
        // Work lost = what alice trained beyond the checkpoint her replacement resumes from.
        result.lostSteps = Math.max(0, (lastTrainedStep("alice") ?? 0) - Number(e.args.resumeStep));
      } else if (e.name === "CheckpointAccepted" && !byAlice && killedAt !== undefined && result.failoverSeconds === undefined) {
        result.failoverSeconds = (Date.now() - killedAt) / 1000;
        note(`>>> failover complete: first checkpoint from the replacement accepted ${result.failoverSeconds.toFixed(1)} s after the kill`);
      } else if (e.name === "VerdictSubmitted" && !timeAdvanced) {
        timeAdvanced = true;
        result.jobWallSeconds = (Date.now() - startedAt) / 1000;
        await afterVerdict(o, net, provider, protocol, actors, note, jobId);
      } else if (e.name === "JobSettled") {
        return result;
      }
    }
    if (Date.now() - lastMetricAt >= 1_000) {
      lastMetricAt = Date.now();
      const [held, owes] = await protocol.escrow.reserves();
      recorder.add("metric", "reserves", { block: head, held, owes });
    }
    await sleep(400, o.signal);
  }
  throw new Error(`the job did not settle within ${o.timeoutMs / 1000} s (status ${JOB_STATUS[Number(await protocol.escrow.statusOf(jobId))]})`);
}

/** Without --dispute: let the dispute window pass. With it: the client disputes, the arbiter stays silent 3 days. */
async function afterVerdict(o: ScenarioOptions, net: ScenarioNetwork, provider: JsonRpcProvider, protocol: Protocol, actors: Actors, note: (l: string) => void, jobId: bigint) {
  if (o.dispute) {
    const bond = await protocol.escrow.disputeBond();
    await (await protocol.usdc.connect(actors.client).approve(await protocol.escrow.getAddress(), bond)).wait();
    await (await protocol.escrow.connect(actors.client).dispute(jobId)).wait();
    note(`client disputed the verdict with a ${formatUsdc(bond)} USDC bond; the arbiter stays silent`);
    await net.passTime(provider, 3 * 24 * 3600 + 1, note);
    note("the arbiter's 3-day deadline passed: anyone may settle, the verdict stands");
  } else {
    await net.passTime(provider, DISPUTE_WINDOW + 1, note);
    note(`the ${DISPUTE_WINDOW} s dispute window passed without a dispute`);
  }
}

async function finish(
  o: ScenarioOptions,
  provider: JsonRpcProvider,
  protocol: Protocol,
  recorder: Recorder,
  note: (line: string) => void,
  jobId: bigint,
  actors: Actors,
  watch: WatchResult,
  deployment: Deployment,
): Promise<ScenarioResult> {
  // Providers and the client pull their money, as they would on their own machines.
  for (const w of [...actors.providers.map((p) => p.wallet), actors.client]) {
    const escrow = protocol.escrow.connect(w);
    // The finalizer claims too; whoever comes second gets JobEscrowNoEarnings, which is the expected race.
    if ((await escrow.earningsOf(jobId, w.address)) > 0n) await claimIfStillUnclaimed(escrow, jobId, w.address);
    if ((await escrow.owed(w.address)) > 0n) await (await escrow.withdraw()).wait();
  }
  // The table, refund and bond come from the events alone (the auditor's view), then are checked against state.
  const ledger = await escrowLedger(protocol.escrow);
  const ledgerJob = ledger.jobs.get(jobId)!;
  const rows = providerRows(actors, providerSummaries(ledgerJob), ledger);
  const job = await protocol.escrow.jobOf(jobId);
  const verdict = await protocol.escrow.verdictOf(jobId);
  const [held, owes] = await protocol.escrow.reserves();
  const refund = ledgerJob.settlement?.refund ?? 0n;
  const bondBack = ledgerJob.settlement?.bondReturned ?? 0n;
  const booksAgree = await ledgerMatchesState(protocol, ledger, [...actors.providers.map((p) => p.wallet.address), actors.client.address]);
  const accuracy = Number(verdict.metric) / 100;
  const template = loadTemplate(o.template);
  const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
  const priceOf = (n: keyof typeof PRICE) => BigInt(Math.round(Number(PRICE[n]) * 1e6));
  const status = JOB_STATUS[Number(await protocol.escrow.statusOf(jobId))];
  const checks: PromiseCheck[] = [{ promise: "the job settled", held: status === "Settled", detail: status }];
  if (o.fault) {
    checks.push({ promise: "the faulty provider was refused and paid nothing", held: byName.mallory?.checkpointsRefused > 0 && byName.mallory?.earned === 0n, detail: `refused ${byName.mallory?.checkpointsRefused}, earned ${formatUsdc(byName.mallory?.earned ?? 0n)}` });
  }
  if (o.kill) {
    checks.push(
      { promise: "the killed provider was paid exactly for its accepted steps", held: byName.alice?.stepsAccepted > 0 && byName.alice.earned === BigInt(byName.alice.stepsAccepted) * priceOf("alice"), detail: `${byName.alice?.stepsAccepted} steps × ${PRICE.alice} = ${formatUsdc(byName.alice?.earned ?? 0n)}` },
      { promise: "the job survived the kill (failover)", held: watch.failoverSeconds !== undefined && job.acceptedStep === job.totalSteps, detail: `${watch.failoverSeconds?.toFixed(1)} s, ${watch.lostSteps} steps lost` },
    );
  }
  checks.push(
    { promise: "every step was paid once, only for accepted work", held: rows.reduce((s, r) => s + r.stepsAccepted, 0) === o.totalSteps && rows.reduce((s, r) => s + r.earned, 0n) === job.paid, detail: `paid ${formatUsdc(job.paid)} of ${formatUsdc(job.budget)}` },
    { promise: "the client got the unspent budget back", held: refund === job.budget - job.paid, detail: `${formatUsdc(refund)} USDC` },
    { promise: "the books rebuilt from events alone match the contract", held: booksAgree && ledger.owes === owes, detail: `owed ${formatUsdc(ledger.owes)} from events, ${formatUsdc(owes)} from state` },
    { promise: "proof of reserves holds", held: held >= owes, detail: `held ${formatUsdc(held)} ≥ owed ${formatUsdc(owes)}` },
    { promise: "the final model beats the job's target", held: verdict.passed && accuracy / 100 >= template.descriptor.evalRules.targetAccuracy, detail: `${accuracy.toFixed(2)} % held-out accuracy (target ${(template.descriptor.evalRules.targetAccuracy * 100).toFixed(0)} %)` },
  );
  if (o.dispute) checks.push({ promise: "arbiter silent 3 days: verdict stands, bond returned", held: bondBack > 0n, detail: `bond returned ${formatUsdc(bondBack)} USDC` });
  const ok = checks.every((c) => c.held);
  const summary = [
    "",
    `final model: held-out accuracy ${accuracy.toFixed(2)} % (${verdict.passed ? "passed" : "failed"} the template's rules)`,
    "",
    ...formatTable(rows),
    "",
    `client refund: ${formatUsdc(refund)} USDC${o.dispute ? `; dispute bond returned: ${formatUsdc(bondBack)} USDC` : ""}`,
    `proof of reserves: held ${formatUsdc(held)} USDC, owed ${formatUsdc(owes)} USDC → ${held >= owes ? "HOLDS" : "FAILED"}`,
    `failover: ${watch.failoverSeconds?.toFixed(1) ?? "n/a"} s from SIGKILL to the replacement's first accepted checkpoint; work lost: ≥ ${watch.lostSteps ?? "n/a"} steps (trained by the killed provider beyond the checkpoint its replacement resumed from, as far as its last log line tells)`,
    "",
    ...checks.map((c) => `${c.held ? "✔" : "✘"} ${c.promise}: ${c.detail}`),
    "",
    ok ? "every promise held" : "a promise was BROKEN",
    `recording: ${recorder.file}`,
  ];
  recorder.add("summary", "start", summary);
  for (const line of summary) o.print(line);
  return { ok, checks, failoverSeconds: watch.failoverSeconds, lostSteps: watch.lostSteps, jobWallSeconds: watch.jobWallSeconds, accuracy, recording: recorder.file, jobId, deployment };
}

// ------------------------------------------------------------------ helpers

/**
 * Earlier runs beside this one keep their recordings; their checkpoint stores (hundreds of MB for MNIST) are
 * removed. Only folders that are runs (they hold a recording.jsonl) are touched.
 */
function pruneOldStores(runsDir: string, current: string) {
  if (!existsSync(runsDir)) return;
  for (const entry of readdirSync(runsDir, { withFileTypes: true })) {
    const dir = path.join(runsDir, entry.name);
    if (!entry.isDirectory() || dir === current || !existsSync(path.join(dir, "recording.jsonl"))) continue;
    rmSync(path.join(dir, "store"), { recursive: true, force: true });
  }
}

type Summary = ReturnType<typeof providerSummaries>[number];

function providerRows(actors: Actors, summaries: Summary[], ledger: Ledger): ProviderRow[] {
  return actors.providers.map((p) => {
    const s = summaries.find((x) => x.provider === p.wallet.address.toLowerCase());
    return {
      name: p.name,
      stepsAccepted: s?.stepsAccepted ?? 0,
      checkpointsRefused: s?.checkpointsRefused ?? 0,
      earned: s?.earned ?? 0n,
      withdrawn: walletOf(ledger, p.wallet.address).withdrawn,
      why: s?.why ?? "never assigned",
    };
  });
}

async function claimIfStillUnclaimed(escrow: Protocol["escrow"], jobId: bigint, provider: string) {
  try {
    await (await escrow.claimEarnings(jobId, provider)).wait();
  } catch (err) {
    if (decodeCustomError(err, escrow.interface)?.name !== "JobEscrowNoEarnings") throw err;
  }
}

/** Every actor's withdrawable balance as the events tell it equals the contract's `owed`. */
async function ledgerMatchesState(protocol: Protocol, ledger: Ledger, accounts: string[]): Promise<boolean> {
  for (const account of accounts) {
    if (walletOf(ledger, account).withdrawable !== (await protocol.escrow.owed(account))) return false;
  }
  return true;
}

function nameBook(actors: Actors): Record<string, string> {
  return Object.fromEntries(actors.providers.map((p) => [p.wallet.address.toLowerCase(), p.name]));
}

function decode(protocol: Protocol, log: Log): LiveEvent | undefined {
  try {
    const parsed = protocol.escrow.interface.parseLog(log);
    if (!parsed) return undefined;
    const args: Record<string, unknown> = {};
    parsed.fragment.inputs.forEach((input, i) => (args[input.name] = parsed.args[i]));
    return { name: parsed.name, args, blockNumber: log.blockNumber };
  } catch {
    return undefined;
  }
}

function describeEvent(e: LiveEvent, names: Record<string, string>): string {
  const who = (a: unknown) => names[String(a).toLowerCase()] ?? String(a).slice(0, 10);
  const a = e.args;
  switch (e.name) {
    case "ProviderAssigned":
      return `[chain] job ${a.jobId} assigned to ${who(a.provider)} (epoch ${a.epoch}, ${formatUsdc(BigInt(a.pricePerStep as bigint))} USDC/step), resuming at step ${a.resumeStep}`;
    case "CheckpointReported":
      return `[chain] ${who(a.provider)} reported step ${a.step} (epoch ${a.epoch}) ${String(a.checkpointHash).slice(0, 10)}…`;
    case "CheckpointAccepted":
      return `[chain] ✔ Quality Guard accepted ${who(a.provider)}'s step ${a.step}: +${a.stepsCredited} steps, ${formatUsdc(BigInt(a.amount as bigint))} USDC credited`;
    case "CheckpointRefused":
      return `[chain] ✘ Quality Guard refused ${who(a.provider)}'s step ${a.step}: fenced off the job`;
    case "ProviderUnassigned":
      return `[chain] ${who(a.provider)} unassigned (${["missed heartbeats", "lease lapsed", "refused"][Number(a.reason)]}); epoch → ${a.newEpoch}`;
    case "VerdictSubmitted":
      return `[chain] verdict: model ${String(a.modelHash).slice(0, 10)}…, accuracy ${(Number(a.metric) / 100).toFixed(2)} %, ${a.passed ? "passed" : "failed"}`;
    case "JobSettled":
      return `[chain] job ${a.jobId} settled: refund ${formatUsdc(BigInt(a.refund as bigint))} USDC, providers ${formatUsdc(BigInt(a.providersPaid as bigint))} USDC`;
    default:
      return `[chain] ${e.name}`;
  }
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string, signal?: AbortSignal) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (signal?.aborted) throw new Error("stopped by the user");
    if (await check().catch(() => false)) return;
    await sleep(500, signal);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}

/** What a recording keeps of a child's output: its decisions and warnings, not the routine per-tick lines. */
function isDecisionLine(name: string, line: string): boolean {
  if (name === "chain") return false;
  const record = safeJson(line) as { msg?: string; level?: string } | undefined;
  if (!record) return line.trim().length > 0;
  return record.level !== "debug" && !/^(tick|reserves|listening)$/.test(String(record.msg));
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
