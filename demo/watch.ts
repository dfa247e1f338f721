/**
 * Follows the job on chain block by block (sdk/node/logRange.ts's cursor: any standard node) until it settles: narrates
 * its events, kills alice after her first accepted checkpoint, times the failover, measures the work lost, tracks
 * proof of reserves at every block, and lets the dispute window (or the arbiter's 3 days) pass after the verdict.
 */
import { eventsFrom } from "../sdk/node/deployment.ts";
import { statusName } from "../sdk/rules/job.ts";
import { decodeLogs, type DecodedLog } from "../sdk/node/events.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { LogCursor, readLogs, type RawLog, type Reorged } from "../sdk/node/logRange.ts";
import { sleep } from "../sdk/run/retry.ts";
import { mined } from "../sdk/node/txManager.ts";
import { DISPUTE_WINDOW, nameBook } from "./actors.ts";
import { chainLine, type LiveEvent } from "./render.ts";
import { lastTrainedStep } from "./render.ts";
import type { HostNet } from "./hosts.ts";
import type { LiveStatus } from "./status.ts";
import type { Actors, Run, SampledSpan, WatchResult } from "./types.ts";

interface Follow {
  run: Run;
  actors: Actors;
  jobId: bigint;
  names: Record<string, string>;
  alice: string;
  startedAt: number;
  result: WatchResult;
  /** alice's highest reported step at the epoch she held when killed. */
  aliceReported: number;
  /** --hosts: what alice had trained when cut off (she keeps training, unreachable; that never counts). */
  aliceStepAtCut?: number;
  timeAdvanced: boolean;
  /** --network rehearsal: a reorg was injected at the verdict; the clock waits for a poll that has seen it. */
  verdictDeferred: boolean;
  /** This job's events on the chain as the watch last read it (rolled back on a reorganisation). */
  events: LiveEvent[];
}

export async function watchJob(run: Run, actors: Actors, jobId: bigint, fromBlock: number): Promise<WatchResult> {
  const { o, provider } = run;
  const alice = actors.providers.find((p) => p.name === "alice")!.wallet.address.toLowerCase();
  const f: Follow = {
    run,
    actors,
    jobId,
    names: nameBook(actors),
    alice,
    startedAt: Date.now(),
    result: {},
    aliceReported: 0,
    timeAdvanced: false,
    verdictDeferred: false,
    events: [],
  };
  // From the deployment's first block (sdk/node/deployment.ts eventsFrom), not the job's: the recording must hold the
  // set-up events too (FeeRecipientSet, the templates' approval), or its books cannot be folded at the first slash
  // and the page plays back "No job posted yet".
  // Only this job's events are narrated and acted on; reserves are sampled from the job's block (settle() goes on
  // through the withdrawals, sampleReservesTo).
  // The registry's too: its stake events are a provider's stake books on a played-back "Check any wallet".
  const cursor = new LogCursor(
    provider,
    { address: [run.deployment.escrow, run.deployment.registry] },
    eventsFrom(undefined, run.deployment),
  );
  const deadline = Date.now() + o.timeoutMs;
  const span: SampledSpan = { first: fromBlock, last: fromBlock - 1 };
  f.result.sampled = span;
  while (Date.now() < deadline) {
    if (o.signal?.aborted) throw new Error("stopped by the user");
    const { logs, head, reorged } = await cursor.poll();
    // The verdict survived the reorg injected after it (or came again): now let the dispute window pass.
    const verdictDeferred = f.verdictDeferred;
    f.verdictDeferred = false;
    if (reorged) {
      // Blocks the watch had read were replaced: the recording says so (its readers fold again without them), the
      // status line is folded again from the job's events that remain; the new chain's events follow.
      run.recorder.add("metric", "reorg", { ...reorged });
      for (const line of rolledBackLines(f.events, reorged, f.names)) run.note(line);
      f.events = rolledBackEvents(f.events, reorged.from);
      if (run.net.rehearsal) run.net.rehearsal.watcherRollbacks++;
      f.run.status.update({ ...watchStatus(f.events, f.names), signed: 0 });
      span.last = Math.max(span.first - 1, Math.min(span.last, reorged.from - 1)); // sample the new blocks again
    }
    // The whole batch is recorded first (the recording's books need every event, also those after the settlement
    // in the same blocks), then the job's events are acted on.
    const recorded = decodeInOrder(run, logs).map(({ l, contract }) => ({
      event: recordEvent(run, l, contract),
      contract,
    }));
    run.recordedTo = cursor.position;
    let settled = false;
    for (const { event, contract } of recorded) {
      if (contract === "registry") continue; // recorded for the books; not part of the job's story
      if (event.args.jobId === undefined || BigInt(event.args.jobId as bigint) !== jobId) continue; // set-up events
      f.events.push(event);
      run.note(chainLine(event, f.names));
      if (await onEvent(f, event)) {
        span.settledBlock = event.blockNumber;
        settled = true;
        break;
      }
    }
    if (verdictDeferred && !f.timeAdvanced && f.events.some((e) => e.name === "VerdictSubmitted")) {
      f.timeAdvanced = true;
      await afterVerdict(run, f.actors, f.jobId);
    }
    // Every block, not only the heads this loop happened to see: the claim is "held ≥ owed at every block".
    // The settlement's batch too (its block and any after it in the batch): sampled before returning.
    await sampleReservesTo(run, f.result, head);
    if (settled) return f.result;
    await sleep(250, o.signal);
  }
  const status = statusName(await run.protocol.escrow.statusOf(jobId));
  throw new Error(`the job did not settle within ${o.timeoutMs / 1000} s (status ${status})`);
}

/** The escrow's and the registry's logs decoded, in chain order, each with the contract it came from. */
function decodeInOrder(run: Run, logs: readonly RawLog[]) {
  const isEscrow = (l: { address: string }) => l.address.toLowerCase() === run.deployment.escrow.toLowerCase();
  const stakes = decodeLogs(
    run.protocol.registry.interface,
    logs.filter((x) => !isEscrow(x)),
  );
  const escrow = decodeLogs(run.protocol.escrow.interface, logs.filter(isEscrow));
  return [
    ...stakes.map((l) => ({ l, contract: "registry" as const })),
    ...escrow.map((l) => ({ l, contract: "escrow" as const })),
  ].sort((a, b) => a.l.blockNumber - b.l.blockNumber || a.l.index - b.l.index);
}

/** Records one event as the live dashboard streams it (with its log index and contract); returns it. */
function recordEvent(run: Run, e: DecodedLog, contract: "escrow" | "registry"): LiveEvent {
  const event: LiveEvent = { name: e.eventName, args: plain(e.args), blockNumber: e.blockNumber };
  run.recorder.add("event", "chain", { ...event, logIndex: e.index, contract });
  return event;
}

/**
 * Records the escrow's and registry's events from where the watch stopped up to the head: what happened after the
 * settlement (the withdrawals) belongs to the recording too, or a played-back wallet shows money still owed that
 * was paid out (a cross-surface test found it).
 */
export async function recordChainTail(run: Run): Promise<void> {
  const from = run.recordedTo;
  if (from === undefined) return;
  const head = await run.provider.getBlockNumber();
  if (head < from) return;
  const filter = { address: [run.deployment.escrow, run.deployment.registry] };
  for (const { l, contract } of decodeInOrder(run, await readLogs(run.provider, filter, from, head))) {
    recordEvent(run, l, contract);
  }
  run.recordedTo = head + 1;
}

/** Reacts to one of the job's events; true once it settled. */
async function onEvent(f: Follow, e: LiveEvent): Promise<boolean> {
  const { run, result } = f;
  const byAlice = String(e.args.provider).toLowerCase() === f.alice;
  trackStatus(f, e);
  // --network rehearsal: a reorganisation just after this event, when it is one of the chosen moments.
  const reorged = (await run.net.rehearsal?.afterEvent(e, run.note)) === true;
  if (e.name === "CheckpointReported" && byAlice) f.aliceReported = Math.max(f.aliceReported, Number(e.args.step));
  if (e.name === "CheckpointAccepted" && byAlice && result.killedAt === undefined && run.o.kill && run.hostNet) {
    // --hosts: alice keeps running, cut off; her later steps never count.
    f.aliceStepAtCut = lastTrainedStep("alice");
    run.hostNet.cut("alice");
    result.killedAt = Date.now();
    run.note(
      `>>> cut alice's network link after her checkpoint at step ${e.args.step} was accepted ` +
        `(her process keeps running, unreachable); she had trained to step ${f.aliceStepAtCut ?? "?"}`,
    );
  } else if (e.name === "CheckpointAccepted" && byAlice && result.killedAt === undefined && run.o.kill) {
    await run.group.kill("alice", "SIGKILL");
    result.killedAt = Date.now();
    const trained = lastTrainedStep("alice") ?? Number(e.args.step);
    run.note(
      `>>> killed alice (SIGKILL) after her checkpoint at step ${e.args.step} was accepted; ` +
        `she had trained to step ${trained}`,
    );
  } else if (e.name === "ProviderAssigned" && result.killedAt !== undefined && result.lostWork === undefined) {
    const resumeStep = Number(e.args.resumeStep);
    const trainedStep = Math.max(f.aliceStepAtCut ?? lastTrainedStep("alice") ?? 0, f.aliceReported);
    result.lostWork = {
      resumeStep,
      reportedStep: f.aliceReported,
      trainedStep,
      steps: Math.max(0, trainedStep - resumeStep),
    };
  } else if (
    e.name === "CheckpointAccepted" &&
    !byAlice &&
    result.killedAt !== undefined &&
    result.failoverSeconds === undefined
  ) {
    result.failoverSeconds = (Date.now() - result.killedAt) / 1000;
    run.note(
      `>>> failover complete: first checkpoint from the replacement accepted ` +
        `${result.failoverSeconds.toFixed(1)} s after the kill`,
    );
    if (run.hostNet) storeOutage(run.hostNet, run.note);
  } else if (e.name === "ProviderSlashed") {
    const finder = f.names[String(e.args.finder).toLowerCase()] ?? String(e.args.finder);
    const [slashed, toClient] = [BigInt(e.args.slashed as bigint), BigInt(e.args.toClient as bigint)];
    result.slash = { faultStep: Number(e.args.faultStep), finder, slashed, toClient };
  } else if (e.name === "VerdictSubmitted" && !f.timeAdvanced) {
    result.jobWallSeconds ??= (Date.now() - f.startedAt) / 1000;
    if (reorged) f.verdictDeferred = true;
    else {
      f.timeAdvanced = true;
      await afterVerdict(run, f.actors, f.jobId);
    }
  } else if (e.name === "JobSettled") {
    return true;
  }
  return false;
}

/** --hosts: the store's host unreachable for 10 s; nothing may be refused for it, and the job must still settle. */
function storeOutage(hostNet: HostNet, note: (line: string) => void): void {
  hostNet.cut("store");
  note(">>> cut the store's network link for 10 s");
  setTimeout(() => {
    try {
      hostNet.restore("store");
      note(">>> the store's link is back");
    } catch {
      // the run ended first and removed its hosts
    }
  }, 10_000).unref();
}

/** The live status line follows the chain: holder and epoch, the pending checkpoint. */
function trackStatus(f: Follow, e: LiveEvent): void {
  const status = f.run.status;
  const who = f.names[String(e.args.provider).toLowerCase()];
  if (e.name === "ProviderAssigned")
    status.update({ holder: who, epoch: BigInt(e.args.epoch as bigint), pendingStep: undefined });
  if (e.name === "ProviderUnassigned") status.update({ holder: undefined, epoch: BigInt(e.args.newEpoch as bigint) });
  if (e.name === "CheckpointReported") status.update({ pendingStep: Number(e.args.step), signed: 0 });
  if (e.name === "CheckpointAccepted" || e.name === "CheckpointRefused")
    status.update({ pendingStep: undefined, signed: 0 });
  if (e.name === "VerdictSubmitted") status.update({ phase: "verdict in, dispute window open" });
}

/**
 * Pure: what `npm start` says about a reorganisation: which blocks were replaced and which of the job's events it
 * had narrated are undone (each as it was told); the new chain's events follow as they are read.
 */
export function rolledBackLines(
  events: readonly LiveEvent[],
  reorged: Reorged,
  names: Record<string, string>,
): string[] {
  const gone = events.filter((e) => e.blockNumber >= reorged.from);
  const head = `>>> chain reorganisation: blocks from ${reorged.from} replaced (${reorged.removed} read)`;
  if (gone.length === 0) return [`${head}; none of the job's events were in them`];
  return [
    `${head}; rolled back ${gone.length} of the job's events (every part reads the new chain; what it holds follows):`,
    ...gone.map((e) => `    undone (block ${e.blockNumber}): ${chainLine(e, names).replace(/^\[chain\] /, "")}`),
  ];
}

/** Pure: the events of the blocks before `from` (a reorganisation replaced the rest). */
export function rolledBackEvents(events: readonly LiveEvent[], from: number): LiveEvent[] {
  return events.filter((e) => e.blockNumber < from);
}

/**
 * Pure: the status line's chain part (holder, epoch, pending checkpoint, phase) folded from one job's events in
 * chain order; folded again from scratch after a reorganisation.
 */
export function watchStatus(events: readonly LiveEvent[], names: Record<string, string>): Partial<LiveStatus> {
  const s: Partial<LiveStatus> = { holder: undefined, epoch: 0n, pendingStep: undefined, phase: undefined };
  for (const e of events) {
    const who = names[String(e.args.provider).toLowerCase()];
    if (e.name === "ProviderAssigned")
      Object.assign(s, { holder: who, epoch: BigInt(e.args.epoch as bigint), pendingStep: undefined });
    if (e.name === "ProviderUnassigned")
      Object.assign(s, { holder: undefined, epoch: BigInt(e.args.newEpoch as bigint) });
    if (e.name === "CheckpointReported") s.pendingStep = Number(e.args.step);
    if (e.name === "CheckpointAccepted" || e.name === "CheckpointRefused") s.pendingStep = undefined;
    if (e.name === "VerdictSubmitted") s.phase = "verdict in, dispute window open";
  }
  return s;
}

/**
 * Samples reserves at every block after the watch's last sampled block up to `toBlock` (the withdrawals after the
 * settlement), so the run's claim covers them too; returns the span now sampled.
 */
export async function sampleReservesTo(
  run: Run,
  result: WatchResult,
  toBlock: number,
): Promise<SampledSpan | undefined> {
  const span = result.sampled;
  if (!span) return undefined;
  for (let b = span.last + 1; b <= toBlock; b++) {
    await sampleReserves(run, result, b);
    span.last = b;
  }
  return span;
}

/** Proof of reserves at `block`: the smallest margin over the run is the figure that proves something. */
async function sampleReserves(run: Run, result: WatchResult, block: number): Promise<void> {
  const [held, owes] = await run.protocol.escrow.reserves({ blockTag: block });
  run.recorder.add("metric", "reserves", { block, held, owes });
  result.blocksSampled = (result.blocksSampled ?? 0) + 1;
  if (result.maxOwed === undefined || owes > result.maxOwed) {
    result.maxOwed = owes;
    result.maxOwedBlock = block;
  }
  const margin = held - owes;
  if (result.minReserveMargin === undefined || margin < result.minReserveMargin) {
    result.minReserveMargin = margin;
    result.minReserveBlock = block;
  }
}

/** Without --dispute: let the dispute window pass. With it: the client disputes, the arbiter stays silent 3 days. */
async function afterVerdict(run: Run, actors: Actors, jobId: bigint): Promise<void> {
  const { o, net, provider, protocol, note } = run;
  if (o.dispute) {
    const bond = await protocol.escrow.disputeBond();
    await mined(protocol.usdc.connect(actors.client).approve(run.deployment.escrow, bond));
    await mined(protocol.escrow.connect(actors.client).dispute(jobId));
    note(`client disputed the verdict with a ${formatUsdc(bond)} bond; the arbiter stays silent`);
    await net.passTime(provider, 3 * 24 * 3600 + 1, note);
    note("the arbiter's 3-day deadline passed: anyone may settle, the verdict stands");
  } else {
    await net.passTime(provider, DISPUTE_WINDOW + 1, note);
    note(`the ${DISPUTE_WINDOW} s dispute window passed without a dispute`);
  }
}

/** An event's arguments as a plain object (ethers' Result → its named fields). */
export function plain(args: unknown): Record<string, unknown> {
  const r = args as { toObject?: () => Record<string, unknown> };
  return typeof r.toObject === "function" ? r.toObject() : (args as Record<string, unknown>);
}
