/**
 * `gpuchain explain JOB [--json]`: the job's history rebuilt from contract events alone (assignments, epochs,
 * checkpoints accepted and refused, failovers, verdict, dispute, settlement) and why each provider earned what it
 * did — then compared with the contract's own state, so an auditor sees both agree.
 */
import { parseCommand, UsageError } from "../sdk/args.ts";
import { jobIdArg, openContext } from "./context.ts";
import { FROM_BLOCK_OPTION, loadLedger } from "./events.ts";
import { JOB_STATUS } from "../sdk/contracts.ts";
import { statusAt } from "../sdk/ledger.ts";
import { formatUsdc, jobNarrative, providerSummaries } from "../sdk/narrative.ts";

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, { ...FROM_BLOCK_OPTION, json: { type: "boolean", default: false } });
  const jobId = jobIdArg(positionals[0]);
  const ctx = openContext(values, false);
  try {
    const ledger = await loadLedger(ctx, values["from-block"]);
    const job = ledger.jobs.get(jobId);
    if (!job) throw new UsageError(`job ${jobId} has no JobCreated event on escrow ${ctx.deployment.escrow}`);
    const { escrow } = ctx.protocol;
    const [onChain, chainStatus, block] = await Promise.all([escrow.jobOf(jobId), escrow.statusOf(jobId), ctx.protocol.escrow.runner!.provider!.getBlock("latest")]);
    const summaries = providerSummaries(job);
    const status = JOB_STATUS[statusAt(job, BigInt(block!.timestamp))];
    const agrees = status === JOB_STATUS[Number(chainStatus)] && job.paid === onChain.paid && job.epoch === onChain.epoch && job.acceptedStep === Number(onChain.acceptedStep);
    if (values.json) {
      console.log(JSON.stringify({ jobId, status, epoch: job.epoch, paid: job.paid, providers: summaries, history: job.history, agreesWithContract: agrees }, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2));
      return agrees ? 0 : 1;
    }
    console.log(`job ${jobId} — ${status}, epoch ${job.epoch}, ${job.acceptedStep}/${job.totalSteps} steps accepted, paid ${formatUsdc(job.paid)} of ${formatUsdc(job.budget)} USDC`);
    console.log("");
    for (const line of jobNarrative(job)) console.log(line);
    console.log("");
    console.log("why each provider earned what it did:");
    for (const s of summaries) {
      console.log(`  ${s.provider}: ${s.stepsAccepted} steps accepted, ${s.checkpointsRefused} refused, earned ${formatUsdc(s.earned)} USDC (released ${formatUsdc(s.released)}) — ${s.why}`);
    }
    console.log("");
    console.log(`rebuilt from events ${agrees ? "agrees" : "DISAGREES"} with the contract's state (status, epoch, accepted step, paid)`);
    return agrees ? 0 : 1;
  } finally {
    ctx.close();
  }
}
