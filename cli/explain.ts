/**
 * `gpuchain explain JOB [--json]`: the job's history rebuilt from contract events alone (assignments, epochs,
 * checkpoints accepted and refused, failovers, verdict, dispute, settlement) and why each provider earned what it
 * did — then compared with the contract's own state, so an auditor sees both agree. An Open job also says why it
 * waits when no active provider fits it, and names each provider that fits but waits for a re-stake after a slash
 * (the coordinator assigns it nothing until then: sdk/rules/restake.ts).
 */
import type { MetricWords } from "../sdk/words/sentences.ts";
import { loadTemplate } from "../workloads/index.ts";
import { metricText } from "../workloads/metric.ts";
import { CommandError, expectPositionals, parseCommand, parseJobId } from "../sdk/run/args.ts";
import { openContext, type CommandContext } from "./context.ts";
import { FROM_BLOCK_OPTION, loadLedger, parseFromBlock, readPoint, unconfirmedLine } from "./events.ts";
import { currentOffers } from "./fit.ts";
import { namesFor } from "./names.ts";
import { statusName } from "../sdk/rules/job.ts";
import { statusAt, type LedgerJob } from "../sdk/rules/ledger.ts";
import { jobNarrative, labelOf, providerSummaries } from "../sdk/words/narrative.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { describeWait, jobFit } from "../sdk/rules/jobFit.ts";
import { restakeLine } from "../sdk/rules/restake.ts";
import { eventsFrom } from "../sdk/node/deployment.ts";
import { addressField, amount, emitJson, JSON_OPTION } from "./json.ts";

export const USAGE = `usage: gpuchain explain JOB [--json] [--from-block N]

  a job's history rebuilt from the escrow's events, why each provider earned what it did, and whether the
  rebuilt books agree with the contract's state (exit 1 if not); --from-block: where its events are read from
  (default: the deployment's first block, from Ignition's journal beside the deployment file, else 0);
  --json: one JSON document (README.md, "Machine-readable output")
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    ...FROM_BLOCK_OPTION,
    ...JSON_OPTION,
  });
  expectPositionals(positionals, ["JOB"]);
  const jobId = parseJobId(positionals[0]);
  const given = parseFromBlock(values["from-block"]);
  const ctx = await openContext(values, false);
  const fromBlock = eventsFrom(given, ctx.deployment);
  try {
    const at = await readPoint(ctx); // events and state at one block
    // The state first: a pruned node keeps only recent blocks' state, and the scan may take longer than that.
    const { escrow } = ctx.protocol;
    const [onChain, chainStatus, block] = await Promise.all([
      escrow.jobOf(jobId, { blockTag: at.head }),
      escrow.statusOf(jobId, { blockTag: at.head }),
      ctx.provider.getBlock(at.head),
    ]);
    const ledger = await loadLedger(ctx, fromBlock, { jobIds: [jobId], toBlock: at.head });
    const job = ledger.jobs.get(jobId);
    if (!job) throw new CommandError(`job ${jobId} has no JobCreated event on escrow ${ctx.deployment.escrow}`);
    const names = await namesFor(ctx, [...providerSummaries(job).map((s) => s.provider), job.client]);
    const summaries = providerSummaries(job, names);
    const status = statusName(statusAt(job, BigInt(block!.timestamp)));
    const agrees =
      status === statusName(chainStatus) &&
      job.paid === onChain.paid &&
      job.epoch === onChain.epoch &&
      job.acceptedStep === Number(onChain.acceptedStep);
    const waits = status === "Open" ? await whyItWaits(ctx, job, fromBlock) : [];
    const unconfirmed = unconfirmedLine(
      job.history.map((h) => h.blockNumber),
      at,
    );
    if (values.json) {
      const read = { block: at.head, confirmedBlock: at.confirmed };
      const providers = summaries.map((p) => ({
        ...p,
        ...addressField("provider", p.provider, names),
        ...amount("earned", p.earned),
        ...amount("released", p.released),
        ...amount("slashed", p.slashed),
        ...amount("forfeited", p.forfeited),
        slash: p.slash && { faultStep: p.slash.faultStep, ...addressField("finder", p.slash.finder, names) },
      }));
      emitJson({
        jobId,
        status,
        epoch: job.epoch,
        ...addressField("client", job.client, names),
        acceptedStep: job.acceptedStep,
        totalSteps: job.totalSteps,
        ...amount("paid", job.paid),
        ...amount("budget", job.budget),
        waits,
        providers,
        read,
        history: job.history,
        agreesWithContract: agrees,
      });
      return agrees ? 0 : 1;
    }
    const progress = `${job.acceptedStep}/${job.totalSteps} steps accepted`;
    console.log(
      `job ${jobId} — ${status}, epoch ${job.epoch}, ${progress}, ` +
        `paid ${formatUsdc(job.paid)} of ${formatUsdc(job.budget)}`,
    );
    for (const why of waits) console.log(`waiting: ${why}`);
    if (unconfirmed) console.log(unconfirmed);
    console.log("");
    for (const line of jobNarrative(job, names, BigInt(block!.timestamp), metricWordsFor(job.templateId)))
      console.log(line);
    console.log("");
    console.log("why each provider earned what it did:");
    for (const s of summaries) {
      const counts = `${s.stepsAccepted} steps accepted, ${s.checkpointsRefused} refused`;
      console.log(
        `  ${labelOf(s.provider, names)}: ${counts}, earned ${formatUsdc(s.earned)} ` +
          `(released ${formatUsdc(s.released)}) — ${s.why}`,
      );
    }
    console.log("");
    const verdict = agrees ? "agrees" : "DISAGREES";
    console.log(`rebuilt from events ${verdict} with the contract's state (status, epoch, accepted step, paid)`);
    return agrees ? 0 : 1;
  } finally {
    ctx.close();
  }
}

/**
 * Why no provider takes the job, as the escrow's assign rules, the registry's offers and the coordinator's re-stake
 * rule tell: a provider that fits the terms but was slashed and has not re-staked since is named with its slash.
 */
async function whyItWaits(ctx: CommandContext, job: LedgerJob, fromBlock: number): Promise<string[]> {
  const terms = {
    totalSteps: job.totalSteps,
    acceptedStep: job.acceptedStep,
    maxPricePerStep: job.maxPricePerStep,
    budget: job.budget,
    paid: job.paid,
    checkpointInterval: job.checkpointInterval,
    minStake: await ctx.protocol.registry.minStake(),
  };
  const fit = jobFit(terms, await currentOffers(ctx, fromBlock));
  const slashed = fit.awaitingRestake.map((o) => restakeLine(o.address, o.slashed!));
  if (fit.reasons.length === 0)
    return [`for the coordinator to assign it (${fit.fitting.length} active provider(s) fit)`, ...slashed];
  if (fit.reasons.every((r) => r.kind === "awaiting re-stake"))
    return [`no eligible provider: every active provider that fits was slashed and has not re-staked`, ...slashed];
  return fit.reasons.map((r) => `no active provider fits: ${describeWait(r)}`);
}

/** The verdict's metric in the words of the job's template, when this software knows it (workloads/metric.ts). */
function metricWordsFor(templateId: string): MetricWords | undefined {
  try {
    const descriptor = loadTemplate(templateId).descriptor;
    return (_job, metric) => metricText(descriptor, metric);
  } catch {
    return undefined;
  }
}
