/**
 * After settlement: everyone pulls their money, then the books are rebuilt from the events alone (the auditor's
 * view), checked against the contract's state, and each promise of the run is checked.
 */
import { eventsFrom } from "../sdk/node/deployment.ts";
import { escrowLedger } from "../sdk/node/events.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { statusName } from "../sdk/rules/job.ts";
import { clientCompensation, stakeBookOf, walletOf, type Ledger } from "../sdk/rules/ledger.ts";
import { providerSummaries } from "../sdk/words/narrative.ts";
import { verifierNamesOn } from "../sdk/node/safeOwners.ts";
import { loadTemplate } from "../workloads/index.ts";
import { meetsTarget, metricText } from "../workloads/metric.ts";
import { PRICE, priceUnits } from "./actors.ts";
import { summaryLines, type PromiseCheck, type ProviderRow } from "./report.ts";
import type { Actors, Run, SampledSpan, ScenarioResult, WatchResult } from "./types.ts";
import { keeperNames, MONEY_CALLS } from "./rehearsal.ts";
import { FINALIZER_CLAIM_WAIT_MS, withdrawAll } from "./withdrawals.ts";
import { sampleReservesTo } from "./watch.ts";

export async function settle(
  run: Run,
  actors: Actors,
  job: { jobId: bigint; fromBlock: number },
  watch: WatchResult,
): Promise<ScenarioResult> {
  const { o, protocol } = run;
  const { jobId } = job;
  const wallets = [...actors.providers.map((p) => p.wallet), actors.client];
  await withdrawAll(protocol.escrow, wallets, jobId, {
    claimWaitMs: FINALIZER_CLAIM_WAIT_MS,
    signal: o.signal,
    note: (line) => run.note(line),
    names: run.names,
  });
  // The events and the state are read at one block: on a chain that mines on a clock (or reorganises) "latest"
  // moves between two reads. The state first: on a pruned node a block's state is gone a few minutes later, and a
  // long event scan could outlast it (gpuchain wallet's rule).
  const accounts = wallets.map((w) => w.address);
  const blockTag = await run.provider.getBlockNumber();
  // "At settlement" is read at the settlement's block (the watch saw its JobSettled), not after the withdrawals.
  const settledBlock = watch.sampled?.settledBlock;
  const [state, verdict, [held, owes], statusCode, owed, atSettlement] = await Promise.all([
    protocol.escrow.jobOf(jobId, { blockTag }),
    protocol.escrow.verdictOf(jobId, { blockTag }),
    protocol.escrow.reserves({ blockTag }),
    protocol.escrow.statusOf(jobId, { blockTag }),
    Promise.all(accounts.map((a) => protocol.escrow.owed(a, { blockTag }))),
    settledBlock === undefined ? undefined : protocol.escrow.reserves({ blockTag: settledBlock }),
  ]);
  // The claim covers the withdrawals too: every block after the watch's last sample up to the one read here.
  const span = await sampleReservesTo(run, watch, blockTag);
  // From the deployment's first block: the global books need every event, the registry's stake events too
  // (reserves count stakes).
  const from = eventsFrom(undefined, run.deployment);
  const ledger = await escrowLedger(protocol.escrow, from, { registry: protocol.registry, toBlock: blockTag });
  const ledgerJob = ledger.jobs.get(jobId)!;
  const names = await verifierNamesOn(run.provider, run.deployment.verifierSafe);
  const rows = providerRows(actors, providerSummaries(ledgerJob, names), ledger);
  const refund = ledgerJob.settlement?.refund ?? 0n;
  const compensation = clientCompensation(ledgerJob);
  const bondBack = ledgerJob.settlement?.bondReturned ?? 0n;
  const booksAgree = accounts.every((a, i) => walletOf(ledger, a).withdrawable === owed[i]);
  const descriptor = loadTemplate(o.template).descriptor;
  const metric = metricText(descriptor, verdict.metric);
  const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
  const status = statusName(statusCode);
  const minMargin = watch.minReserveMargin ?? held - owes;
  const checks: PromiseCheck[] = [{ promise: "the job settled", held: status === "Settled", detail: status }];
  if (o.fault) {
    const m = byName.mallory;
    const detail = `refused ${m?.checkpointsRefused}, earned ${formatUsdc(m?.earned ?? 0n)}`;
    checks.push({
      promise: "the faulty provider was refused and paid nothing",
      held: m?.checkpointsRefused > 0 && m?.earned === 0n,
      detail,
    });
    const s = watch.slash;
    // Faults a one-step replay proves slash; a blob that hashes wrong, NaN or a replayed old blob only refuse.
    if (["garbage-weights", "skip-steps", "wrong-data"].includes(o.fault.split(":")[0]))
      checks.push({
        promise: "the faulty provider was slashed (stake lost, client compensated)",
        held: s !== undefined && s.slashed > 0n && s.toClient > 0n,
        detail: s ? slashDetail(s) : "no slash",
      });
  }
  if (o.kill) {
    const a = byName.alice;
    const exact = a?.stepsAccepted > 0 && a.earned === BigInt(a.stepsAccepted) * priceUnits("alice");
    const lost = watch.lostWork ? `${watch.lostWork.steps} steps lost` : "lost work unknown";
    checks.push(
      {
        promise: "the killed provider was paid exactly for its accepted steps",
        held: exact,
        detail: `${a?.stepsAccepted} steps × ${PRICE.alice} = ${formatUsdc(a?.earned ?? 0n)}`,
      },
      {
        promise: "the job survived the kill (failover)",
        held: watch.failoverSeconds !== undefined && state.acceptedStep === state.totalSteps,
        detail: `${watch.failoverSeconds?.toFixed(1)} s, ${lost}`,
      },
    );
  }
  const stepsPaid = rows.reduce((s, r) => s + r.stepsAccepted, 0);
  const earned = rows.reduce((s, r) => s + r.earned, 0n);
  checks.push(
    {
      promise: "every step was paid once, only for accepted work",
      held: stepsPaid === o.totalSteps && earned === state.paid,
      detail: `paid ${formatUsdc(state.paid)} of ${formatUsdc(state.budget)}`,
    },
    {
      promise: "the client got the unspent budget back",
      held: refund === state.budget - state.paid,
      detail: formatUsdc(refund),
    },
    {
      promise: "the books rebuilt from events alone match the contract",
      held: booksAgree && ledger.owes === owes,
      detail: `owed ${formatUsdc(ledger.owes)} from events, ${formatUsdc(owes)} from state`,
    },
    {
      promise: reservesPromise(span),
      held: minMargin >= 0n && held >= owes,
      detail: reservesDetail(watch, minMargin, settlementFigures(atSettlement, settledBlock, { held, owes, blockTag })),
    },
    {
      promise: "the final model beats the job's target",
      held: verdict.passed && meetsTarget(descriptor, verdict.metric),
      detail: metric,
    },
  );
  if (o.dispute)
    checks.push({
      promise: "arbiter silent 3 days: verdict stands, bond returned",
      held: bondBack > 0n,
      detail: `bond returned ${formatUsdc(bondBack)}`,
    });
  const rehearsal = await rehearsalPart(run, actors, job.fromBlock, watch);
  if (rehearsal) checks.push(...rehearsal.checks);
  const ok = checks.every((c) => c.held);
  const summary = summaryLines({
    extra: rehearsal?.lines,
    metric,
    passed: verdict.passed,
    rows,
    refund,
    compensation,
    bondBack,
    dispute: o.dispute,
    watch,
    checks,
    ok,
    recording: run.recorder.file,
  });
  run.recorder.add("summary", "start", summary);
  return {
    ok,
    checks,
    summary,
    metric: verdict.metric,
    jobId,
    deployment: run.deployment,
    recording: run.recorder.file,
    failoverSeconds: watch.failoverSeconds,
    lostSteps: watch.lostWork?.steps,
    killedAt: watch.killedAt, // bench/timeline.ts times the failover's parts from here
    lostWork: watch.lostWork,
    jobWallSeconds: watch.jobWallSeconds,
    minReserveMargin: minMargin,
    rehearsal: rehearsal?.result,
  };
}

/** --network rehearsal: the audit straight from the node, its checks, what was injected and what each part did. */
async function rehearsalPart(run: Run, actors: Actors, fromBlock: number, watch: WatchResult) {
  const r = run.net.rehearsal;
  if (!r) return undefined;
  const names = { ...keeperNames(), ...(run.names ?? {}), [actors.client.address.toLowerCase()]: "client" };
  const honest = actors.providers.filter((p) => p.name !== "mallory").map((p) => p.wallet.address.toLowerCase());
  const audit = await r.audit(run.protocol, names, fromBlock, honest);
  const report = r.report(audit, watch.jobWallSeconds, MONEY_CALLS);
  const inj = r.injected();
  return {
    checks: report.checks,
    lines: report.lines,
    result: {
      lines: report.lines,
      injected: { ...inj },
      reorgs: r.reorgs.length,
      falseActions: report.falseActions,
      moneyFalseActions: report.moneyFalseActions,
      requestsPerPart: Object.fromEntries([...r.proxies].map(([k, p]) => [k, p.counts.requests])),
      // JSON-RPC calls (a batch is one request, several calls) and the span from a part's first to last request.
      callsPerPart: Object.fromEntries(
        [...r.proxies].map(([k, p]) => [k, Object.values(p.counts.methods).reduce((a, b) => a + b, 0)]),
      ),
      secondsPerPart: Object.fromEntries(
        [...r.proxies].map(([k, p]) => {
          const a = p.counts.arrivals;
          return [k, a.length > 1 ? (a[a.length - 1] - a[0]) / 1000 : 0];
        }),
      ),
      jobSeconds: watch.jobWallSeconds,
    },
  };
}

/** The figure that proves something is the one during the run: the smallest margin while the most was owed. */
function reservesDetail(w: WatchResult, minMargin: bigint, figures: string): string {
  const during = w.blocksSampled
    ? `${w.blocksSampled} blocks, smallest margin held − owed ${formatUsdc(minMargin)} ` +
      `(block ${w.minReserveBlock}), ` +
      `most owed ${formatUsdc(w.maxOwed ?? 0n)} (block ${w.maxOwedBlock})`
    : "no block sampled";
  return `${during}; ${figures}`;
}

/** Which blocks the claim covers: every one from the job's creation through the withdrawals (the blocks sampled). */
function reservesPromise(span: SampledSpan | undefined): string {
  if (!span || span.last < span.first) return "proof of reserves held at the block read after the withdrawals";
  return (
    `proof of reserves held at every block from the job's creation (block ${span.first}) ` +
    `through the withdrawals (block ${span.last})`
  );
}

/** Reserves at the settlement's block; failing that (no JobSettled block known), labelled as read after. */
function settlementFigures(
  at: readonly [bigint, bigint] | undefined,
  settledBlock: number | undefined,
  after: { held: bigint; owes: bigint; blockTag: number },
): string {
  if (at !== undefined && settledBlock !== undefined)
    return `at settlement (block ${settledBlock}) held ${formatUsdc(at[0])}, owed ${formatUsdc(at[1])}`;
  return `after the withdrawals (block ${after.blockTag}) held ${formatUsdc(after.held)}, owed ${formatUsdc(after.owes)}`;
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
      stake: stakeBookOf(ledger, p.wallet.address),
      why: s?.why ?? "never assigned",
    };
  });
}

/** The slash check's figures: where the fault was, who found it, what it cost and what the client got of it. */
function slashDetail(s: NonNullable<WatchResult["slash"]>): string {
  return `fault at step ${s.faultStep}, found by ${s.finder}: ${formatUsdc(s.slashed)} slashed, ${formatUsdc(s.toClient)} to the client`;
}
