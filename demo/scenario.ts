/**
 * The whole network on one machine, keeping its three promises in front of the user:
 * a job survives a provider killed mid-job (SIGKILL → failover from the last accepted checkpoint), a faulty
 * provider is refused by the Quality Guard, and the escrow pays each provider exactly for accepted steps.
 * Used by `npm start` (real MNIST template) and by the end-to-end test (a shorter configuration).
 *
 * The parts: network.ts (where it runs), actors.ts (who takes part), watch.ts (following the job on chain),
 * settlement.ts (the books and the promises), report.ts (the closing lines), status.ts (the live line).
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { JsonRpcProvider } from "ethers";
import { connectChecked, connectProtocol } from "../sdk/node/contracts.ts";
import { loadDeployment } from "../sdk/node/deployment.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { sleep } from "../sdk/run/retry.ts";
import { loadTemplate } from "../workloads/index.ts";
import { freePort } from "./chain.ts"; // dashboard hook
import {
  budgetOf,
  createJob,
  nameBook,
  PROVIDER_NAMES,
  prepareActors,
  providersRegistered,
  startOffChain,
} from "./actors.ts";
import { externalNetwork, localNetwork, rehearsalNetwork, type ScenarioNetwork } from "./network.ts";
import { ProcessGroup } from "./processes.ts";
import { Recorder } from "./recording.ts";
import { markLive, pruneEndedStores } from "./runDirs.ts";
import { chainLine, renderChildLine } from "./render.ts";
import { keptHowTo } from "./report.ts";
import { checkStoreOption, runStore, type RunStore } from "./s3.ts";
import { exitEndsRun, exitReport } from "./childExit.ts";
import { scenarioHosts, type HostNet } from "./hosts.ts";
import { settle } from "./settlement.ts";
import { StatusLine } from "./status.ts";
import type { Run, ScenarioOptions, ScenarioResult } from "./types.ts";
import { plain, recordChainTail, watchJob } from "./watch.ts";
import { LogCursor } from "../sdk/node/logRange.ts";
import { decodeLogs } from "../sdk/node/events.ts";
import { loadKey } from "../sdk/run/keys.ts";
import { namesEntryData } from "../sdk/run/recording.ts";
import { startDashboardServer, type DashboardServer } from "../dashboard/server/server.ts"; // dashboard hook

export type { ScenarioOptions, ScenarioResult } from "./types.ts";

export async function runScenario(given: ScenarioOptions): Promise<ScenarioResult> {
  checkStoreOption(given.store); // before anything is started or deployed
  // A child that exits on its own stops the run's waiting (its own abort) as Ctrl-C does (the caller's).
  const childDied = new AbortController();
  const signals = [given.signal, childDied.signal].filter((s) => s !== undefined);
  const o: ScenarioOptions = { ...given, signal: AbortSignal.any(signals) };
  pruneEndedStores(path.dirname(o.runDir), o.runDir);
  rmSync(o.runDir, { recursive: true, force: true });
  mkdirSync(o.runDir, { recursive: true });
  const unmark = markLive(o.runDir);
  const recorder = new Recorder(path.join(o.runDir, "recording.jsonl"));
  const status = new StatusLine(o.print, o.liveStatus === true, o.totalSteps);
  let quiet = false; // once stopping: the children's shutdown chatter is recorded, not shown
  const note = (line: string) => {
    if (!quiet) status.line(line);
    recorder.add("note", "start", line);
  };
  const group = new ProcessGroup(
    (name, line, stream) => {
      if (isDecisionLine(name, line)) recorder.add("log", name, safeJson(line) ?? line);
      net?.rehearsal?.childLine(name, line);
      followChild(status, name, line);
      const shown = renderChildLine(name, line, stream);
      if (shown) note(shown);
    },
    (name) => (PROVIDER_NAMES.includes(name) ? undefined : o.backgroundNice),
  );
  const guard = guardChildren(group, o.fault, childDied, note);
  let provider: JsonRpcProvider | undefined;
  let net: ScenarioNetwork | undefined;
  let result: ScenarioResult | undefined;
  let storage: RunStore | undefined; // the run's checkpoint store
  let hostNet: HostNet | undefined; // --hosts: every part on a host of its own
  let dashboard: DashboardServer | undefined; // dashboard hook
  try {
    if (o.hosts) hostNet = scenarioHosts(o.runDir, note);
    const at = hostNet && { address: hostNet.host("chain").ip, wrapper: hostNet.wrapper("chain") };
    net = o.external
      ? await externalNetwork(o.external.rpc, o.external.deploymentFile, o.external.keysDir)
      : o.rehearsal
        ? await rehearsalNetwork(group, o, note)
        : await localNetwork(group, { ...o, at }, note);
    if (o.dispute && !net.canWaitDays) {
      throw new Error("--dispute waits out the arbiter's 3 days: only on the local chain, whose clock can be advanced");
    }
    storage = await runStore(o.runDir, o.store, hostNet && { net: hostNet, group });
    note(`started: ${storage.describe}`);
    const run = await openRun(o, net, { group, recorder, status, storage, hostNet }, note);
    provider = run.provider;
    // dashboard hook: served for the whole run (read-only); it finds the keepers once startOffChain has chosen ports
    dashboard = await startDashboardServer({
      rpc: net.rpcFor?.("dashboard") ?? net.rpc,
      deploymentFile: net.deploymentFile,
      note,
      port: await freePort(8700),
      store: storage.url,
      storeEnv: storage.env,
      coordinatorUrl: () => run.keeperUrls?.coordinator,
      collectorUrl: () => run.keeperUrls?.collector,
      extraRecordings: { "this-run.jsonl": recorder.file },
      runLog: recorder.log, // live shows what the recording says, from the same entries
    });
    note(`dashboard: ${dashboard.url}`);
    const up = { provider, protocol: run.protocol, rpc: net.rpc, deploymentFile: net.deploymentFile, runDir: o.runDir };
    await o.onNetworkUp?.(up);
    result = await guard.race(playJob(run));
    guard.disarm(); // from here on the run stops them itself (or --keep narrates their exits)
    await o.beforeStop?.({
      provider,
      protocol: run.protocol,
      jobId: result.jobId!,
      rpc: net.rpc,
      deploymentFile: net.deploymentFile,
    });
    if (o.keep) {
      quiet = true; // the summary and the how-to stay on screen; the children keep recording
      await keepUp(run, result);
    }
    return result;
  } finally {
    guard.disarm();
    quiet = true;
    status.stop();
    await dashboard?.close(); // dashboard hook
    const count = group.size;
    await group.stopAll(5_000, ["chain"]);
    await net?.close?.();
    await storage?.close();
    hostNet?.destroy();
    provider?.destroy();
    await recorder.close();
    unmark();
    // A local chain is gone with this run; its deployment journal would only mislead the next one.
    if (!o.external) rmSync(path.join("ignition", "deployments", o.deploymentId), { recursive: true, force: true });
    if (count > 0) o.print(`stopped the ${count} processes this run started`);
    // The result stays the last thing on screen.
    for (const line of result?.summary ?? []) o.print(line);
  }
}

/**
 * Until disarmed: a child that exits when the run did not ask it to (exitEndsRun) ends the run. Its last stderr
 * lines are shown, `stop` aborts whatever the run was waiting for, and `race(p)` rejects with the one line that
 * names the child and its last words, instead of `p` waiting out a timeout.
 */
function guardChildren(group: ProcessGroup, fault: string, stop: AbortController, note: (line: string) => void) {
  let armed = true;
  let fail!: (err: Error) => void;
  const died = new Promise<never>((_, reject) => (fail = reject));
  died.catch(() => {}); // raced later, or never (a death before the race still ends it at once)
  group.onExit = (name, code, signal, how) => {
    const exit = { name, code, signal, ...how };
    if (!armed || !exitEndsRun(exit, fault)) return;
    armed = false;
    const report = exitReport(exit);
    for (const line of report.lines) note(line);
    fail(new Error(report.message));
    stop.abort();
  };
  return {
    race<T>(p: Promise<T>): Promise<T> {
      p.catch(() => {}); // the loser of the race: stopped by the abort, its error is not the news
      return Promise.race([p, died]);
    },
    disarm: () => void (armed = false),
  };
}

/** Connects (checked: chain id, contract code) and approves the template: the run's shared handles. */
async function openRun(
  o: ScenarioOptions,
  net: ScenarioNetwork,
  parts: Pick<Run, "group" | "recorder" | "status" | "storage" | "hostNet">,
  note: (line: string) => void,
): Promise<Run> {
  const { recorder } = parts;
  const hosts = parts.hostNet ? ["Separate hosts on one machine (network namespaces)"] : [];
  const badges = [net.badge, ...hosts, "Synthetic (CPU workload standing in for a GPU)", "Capped profile (bob)"];
  if (o.fault) badges.push("Injected fault (mallory)");
  recorder.add("badge", "start", badges);
  note(`badges: ${badges.map((b) => `[${b}]`).join(" ")}`);
  const deployment = loadDeployment(net.deploymentFile);
  const { provider } = await connectChecked(net.rpc, deployment, 30_000, 250);
  const protocol = connectProtocol(deployment, provider);
  const template = loadTemplate(o.template);
  await net.approveTemplate(protocol, provider, template.templateId);
  const templateNote = `template ${template.descriptor.name} approved (${template.templateId.slice(0, 10)}…)`;
  note(`escrow ${deployment.escrow}; verifier Safe ${deployment.verifierSafe}; ${templateNote}`);
  return { o, net, provider, protocol, deployment, ...parts, note };
}

/** Providers register, the client posts the job, the network works it to settlement. */
async function playJob(run: Run): Promise<ScenarioResult> {
  const { o, note } = run;
  const template = loadTemplate(o.template);
  const actors = await prepareActors(run);
  run.names = nameBook(actors);
  run.recorder.add("log", "start", namesEntryData(runNames(run, actors))); // the recording's and live's names
  await startOffChain(run, actors);
  note("started: keepers (coordinator, verdict collector, finalizer, reserves watch), 3 verifiers, 3 providers");
  await waitFor(() => providersRegistered(run.protocol, actors.providers), 120_000, "providers to register", o.signal);
  // Post once the coordinator has every provider's beat (it is up and can assign at once: the job's clock starts
  // at creation, the bench's overhead_ratio_long).
  await waitFor(() => heartbeatsSeen(run, actors.providers), 120_000, "every provider's heartbeat", o.signal);
  const { jobId, block } = await createJob(run, actors.client, template.templateId);
  note(
    `client posted job ${jobId}: ${o.totalSteps} steps of ${template.descriptor.name}, checkpoint every ` +
      `${o.checkpointInterval}, budget ${formatUsdc(budgetOf(o.totalSteps))} locked`,
  );
  const watch = await watchJob(run, actors, jobId, block);
  const result = await settle(run, actors, { jobId, fromBlock: block }, watch);
  await recordChainTail(run); // the withdrawals after the settlement, for the recording's books
  return result;
}

/** Who the run's addresses are: nameBook's (providers, verifiers), the keys of the deployment's roles, the client. */
function runNames(run: Run, actors: Parameters<typeof nameBook>[0]): Record<string, string> {
  const names: Record<string, string> = {};
  const roles = [
    ["owner", run.net.keyFiles.owner],
    ["arbiter", run.net.arbiterKeyFile],
    ["coordinator", run.net.keyFiles.coordinator],
  ] as const;
  for (const [name, file] of roles) {
    try {
      if (file) names[loadKey(file).address.toLowerCase()] = name;
    } catch {
      // a role whose key this run does not hold stays unnamed
    }
  }
  return { ...names, ...nameBook(actors), [actors.client.address.toLowerCase()]: "client" };
}

/** Whether the coordinator lists a heartbeat of each of `providers` (GET /heartbeats). */
async function heartbeatsSeen(run: Run, providers: { wallet: { address: string } }[]): Promise<boolean> {
  const res = await fetch(`${run.keeperUrls!.coordinator}/heartbeats`, { signal: AbortSignal.timeout(2_000) });
  const { beats } = (await res.json()) as { beats: { provider: string }[] };
  const seen = new Set(beats.map((b) => b.provider.toLowerCase()));
  return providers.every((p) => seen.has(p.wallet.address.toLowerCase()));
}

/** --keep: the summary, how to look around, then everything stays up until Ctrl-C. */
async function keepUp(run: Run, result: ScenarioResult): Promise<void> {
  const { o, net } = run;
  run.status.stop();
  for (const line of result.summary) o.print(line);
  const howTo = keptHowTo({
    jobId: result.jobId!,
    rpc: net.rpc,
    deploymentFile: net.deploymentFile,
    clientKeyFile: net.keyFiles.client,
    arbiterKeyFile: net.arbiterKeyFile,
    template: o.template,
  });
  for (const line of howTo) o.print(line);
  o.print("what happens from here on (new jobs, failovers, slashes, a part of the network that stops) shows below");
  o.print("");
  await narrateKept(run);
}

/**
 * --keep: every escrow event from here on as one line (any job, not only the scenario's), and every child that
 * exits, until Ctrl-C. Printed directly: the run's own narration went quiet with the summary.
 */
async function narrateKept(run: Run): Promise<void> {
  const { o } = run;
  const stopping = () => o.signal?.aborted === true;
  run.group.onExit = (name, code, signal) => {
    if (stopping()) return;
    const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
    o.print(`[${name}] ${how}: it is no longer part of the network (npm start does not restart it)`);
  };
  const cursor = new LogCursor(
    run.provider,
    { address: run.deployment.escrow },
    run.recordedTo ?? (await run.provider.getBlockNumber()) + 1,
  );
  while (!stopping()) {
    try {
      const { logs } = await cursor.poll();
      for (const e of decodeLogs(run.protocol.escrow.interface, logs)) {
        const event = { name: e.eventName, args: plain(e.args), blockNumber: e.blockNumber };
        run.recorder.add("event", "chain", event);
        if (event.name !== "LeaseExtended") o.print(chainLine(event, run.names ?? {})); // a beat, not news
      }
    } catch (err) {
      if (!stopping()) o.print(`[chain] unreadable just now (${(err as Error)?.message ?? err}); trying again`);
    }
    await sleep(1_000, o.signal).catch(() => undefined);
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

/** The live line's step and signature count come from the children's structured records. */
function followChild(status: StatusLine, name: string, line: string): void {
  const r = safeJson(line) as Record<string, unknown> | undefined;
  if (!r) return;
  if (name === status.current.holder && typeof r.step === "number") status.update({ step: r.step });
  if (r.component === "collector" && r.msg === "signature" && r.action !== "verdict") {
    if (Number(r.step) === status.current.pendingStep) {
      status.update({ signed: Number(r.signatures), threshold: Number(r.threshold) });
    }
  }
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
