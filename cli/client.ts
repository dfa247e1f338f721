/**
 * `gpuchain job create --template NAME --steps N --interval N --max-price USDC [--budget USDC] [--dispute-window S]`
 * `gpuchain job cancel JOB`
 * `gpuchain job approve-template NAME` (escrow owner only)
 * The client locks its budget with an EIP-2612 permit in the same transaction when the token supports it.
 */
import { Signature, type Wallet } from "ethers";
import { parseCommand, parsePositiveInt, parseUsdc, requireString, UsageError } from "../sdk/args.ts";
import { jobIdArg, openContext, usdc, type CommandContext } from "./context.ts";
import { describeError } from "../sdk/errors.ts";
import { JOB_STATUS, protocolInterfaces } from "../sdk/contracts.ts";
import { loadTemplate } from "../workloads/index.ts";

const OPTIONS = {
  template: { type: "string" },
  steps: { type: "string" },
  interval: { type: "string" },
  "max-price": { type: "string" },
  budget: { type: "string" },
  "dispute-window": { type: "string" },
} as const;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, OPTIONS);
  const [action, arg] = positionals;
  if (!["create", "cancel", "approve-template"].includes(action ?? "")) {
    throw new UsageError("usage: gpuchain job create|cancel|approve-template …");
  }
  const request = action === "create" ? buildRequest(values) : undefined;
  const ctx = openContext(values, true);
  try {
    if (action === "create") return await create(ctx, request!, values["dry-run"]!);
    if (action === "cancel") return await cancel(ctx, jobIdArg(arg));
    return await approveTemplate(ctx, requireString(arg, "template"));
  } catch (err) {
    console.error(`job ${action} failed: ${describeError(err, protocolInterfaces().escrow)}`);
    return 1;
  } finally {
    ctx.close();
  }
}

interface Request {
  templateName: string;
  templateId: string;
  totalSteps: number;
  checkpointInterval: number;
  maxPricePerStep: bigint;
  budget: bigint;
  disputeWindow: number;
}

/** Validates everything before any transaction, so bad input costs nothing. */
export function buildRequest(values: Record<string, string | boolean | undefined>): Request {
  const template = loadTemplate(requireString(values.template, "template"));
  const totalSteps = parsePositiveInt(values.steps as string | undefined, "steps");
  const checkpointInterval = parsePositiveInt(values.interval as string | undefined, "interval", Math.min(50, totalSteps));
  if (checkpointInterval > totalSteps) throw new UsageError(`--interval (${checkpointInterval}) cannot exceed --steps (${totalSteps})`);
  const maxPricePerStep = parseUsdc(requireString(values["max-price"], "max-price"), "max-price");
  const budget = values.budget ? parseUsdc(values.budget as string, "budget") : maxPricePerStep * BigInt(totalSteps);
  const disputeWindow = parsePositiveInt(values["dispute-window"] as string | undefined, "dispute-window", 300);
  return { templateName: template.descriptor.name, templateId: template.templateId, totalSteps, checkpointInterval, maxPricePerStep, budget, disputeWindow };
}

async function create(ctx: CommandContext, r: Request, dryRun: boolean): Promise<number> {
  const { escrow } = ctx.protocol;
  if (!(await escrow.isApprovedTemplate(r.templateId))) {
    console.error(`template ${r.templateName} (${r.templateId}) is not approved on this escrow`);
    return 1;
  }
  const call = {
    templateId: r.templateId,
    totalSteps: r.totalSteps,
    checkpointInterval: r.checkpointInterval,
    maxPricePerStep: r.maxPricePerStep,
    budget: r.budget,
    disputeWindow: r.disputeWindow,
  };
  console.log(`job: ${r.templateName}, ${r.totalSteps} steps, checkpoint every ${r.checkpointInterval}, ≤ ${usdc(r.maxPricePerStep)} USDC/step, budget ${usdc(r.budget)} USDC`);
  if (dryRun) return 0;
  const permit = await signPermit(ctx, r.budget).catch(() => undefined);
  const tx = permit
    ? await escrow.createJobWithPermit(call, permit.deadline, permit.v, permit.r, permit.s)
    : await approveThen(ctx, r.budget, () => escrow.createJob(call));
  const receipt = await tx.wait();
  const created = receipt!.logs.map((l) => escrow.interface.parseLog(l)).find((e) => e?.name === "JobCreated");
  console.log(`created job ${created?.args.jobId} (tx ${receipt!.hash}); budget locked${permit ? " with a permit" : ""}`);
  return 0;
}

async function approveThen<T>(ctx: CommandContext, amount: bigint, send: () => Promise<T>): Promise<T> {
  await (await ctx.protocol.usdc.approve(ctx.deployment.escrow, amount)).wait();
  return send();
}

async function signPermit(ctx: CommandContext, value: bigint) {
  const signer = ctx.signer as Wallet;
  const token = ctx.protocol.usdc;
  const [name, nonce, { chainId }] = await Promise.all([token.name(), token.nonces(signer.address), signer.provider!.getNetwork()]);
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const domain = { name, version: "1", chainId, verifyingContract: ctx.deployment.usdc };
  const types = {
    Permit: [
      { name: "owner", type: "address" },
      { name: "spender", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "uint256" },
      { name: "deadline", type: "uint256" },
    ],
  };
  const sig = Signature.from(await signer.signTypedData(domain, types, { owner: signer.address, spender: ctx.deployment.escrow, value, nonce, deadline }));
  return { deadline, v: sig.v, r: sig.r, s: sig.s };
}

async function cancel(ctx: CommandContext, jobId: bigint): Promise<number> {
  const { escrow } = ctx.protocol;
  const status = JOB_STATUS[Number(await escrow.statusOf(jobId))];
  if (status !== "Open") {
    console.error(`job ${jobId} is ${status}: only an Open job (no provider assigned) can be cancelled`);
    return 1;
  }
  const receipt = await (await escrow.cancel(jobId)).wait();
  console.log(`job ${jobId} cancelled (tx ${receipt!.hash}); the unspent budget is withdrawable with \`gpuchain withdraw\``);
  return 0;
}

async function approveTemplate(ctx: CommandContext, nameOrId: string): Promise<number> {
  const t = loadTemplate(nameOrId);
  const receipt = await (await ctx.protocol.escrow.setTemplateApproval(t.templateId, true)).wait();
  console.log(`approved template ${t.descriptor.name} (${t.templateId}) (tx ${receipt!.hash})`);
  return 0;
}
