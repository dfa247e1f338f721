/** `gpuchain arbiter resolve JOB --uphold|--reject --key FILE`: the arbiter decides a dispute before the deadline. */
import { parseCommand, UsageError } from "../sdk/args.ts";
import { jobIdArg, openContext } from "./context.ts";
import { describeError } from "../sdk/errors.ts";
import { JOB_STATUS, protocolInterfaces } from "../sdk/contracts.ts";

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    uphold: { type: "boolean", default: false },
    reject: { type: "boolean", default: false },
  });
  if (positionals[0] !== "resolve") throw new UsageError("usage: gpuchain arbiter resolve JOB --uphold|--reject --key FILE");
  if (values.uphold === values.reject) throw new UsageError("give exactly one of --uphold (the client is right) or --reject (the verdict stands)");
  const jobId = jobIdArg(positionals[1]);
  const ctx = openContext(values, true);
  const { escrow } = ctx.protocol;
  try {
    const status = JOB_STATUS[Number(await escrow.statusOf(jobId))];
    if (status !== "Disputed") {
      console.error(`job ${jobId} is ${status}: only a Disputed job within the 3-day deadline can be resolved`);
      return 1;
    }
    if (values["dry-run"]) {
      console.log(`would ${values.uphold ? "uphold" : "reject"} the dispute on job ${jobId}`);
      return 0;
    }
    const receipt = await (await escrow.resolveDispute(jobId, values.uphold)).wait();
    console.log(
      `job ${jobId}: dispute ${values.uphold ? "upheld — provider payments void, budget and bond back to the client" : "rejected — the verdict stands, the bond goes to the fee recipient"} (tx ${receipt!.hash})`,
    );
    return 0;
  } catch (err) {
    console.error(`resolve failed: ${describeError(err, protocolInterfaces().escrow)}`);
    return 1;
  } finally {
    ctx.close();
  }
}
