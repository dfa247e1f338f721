/**
 * `gpuchain job create|cancel|approve-template`: the client's side of a job.
 * The client locks its budget with an EIP-2612 permit in the same transaction when the token supports it.
 */
import { Signature, type Wallet } from "ethers";
import {
  CommandError,
  expectPositionals,
  parseCommand,
  parseDuration,
  parseJobId,
  parsePositiveInt,
  parseUsdc,
  requireString,
  UsageError,
} from "../sdk/args.ts";
import { confirm, openContext, requireJob, templateArg, type CommandContext } from "./context.ts";
import { describeError } from "../sdk/errors.ts";
import { protocolInterfaces } from "../sdk/contracts.ts";
import { statusName } from "../sdk/job.ts";
import { formatDuration, formatPrice, formatUsdc } from "../sdk/format.ts";
import { warnIfNobodyFits } from "./fit.ts";

export const USAGE = `usage: gpuchain job <create|cancel|approve-template> [options]

  job create --template NAME --steps N --max-price USDC --key FILE [--interval N] [--budget USDC]
             [--dispute-window DURATION]
      post a job and lock its budget (default budget: max price × steps; interval: min(50, steps);
      dispute window: 300 s, between 60 s and 30 d, written 300, 90s, 5m, 2h or 3d)
  job cancel JOB --key FILE              cancel an Open job (no provider yet); the budget becomes withdrawable
  job approve-template NAME --key FILE   the escrow owner approves a workload template

  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

const OPTIONS = {
  template: { type: "string" },
  steps: { type: "string" },
  interval: { type: "string" },
  "max-price": { type: "string" },
  budget: { type: "string" },
  "dispute-window": { type: "string" },
} as const;

/** The escrow's MIN_DISPUTE_WINDOW and MAX_DISPUTE_WINDOW (contracts/JobEscrow.sol), checked here before sending. */
const DISPUTE_WINDOW_BOUNDS = { min: 60, max: 30 * 86_400 };
const ACTIONS = ["create", "cancel", "approve-template"];

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, OPTIONS);
  const [action, arg] = positionals;
  if (!ACTIONS.includes(action ?? "")) {
    const got = action === undefined ? "none" : `"${action}"`;
    throw new UsageError(`job needs an action: create, cancel or approve-template (got ${got})`, true);
  }
  // Everything typed is checked before a file is read or the chain is asked.
  expectPositionals(positionals, action === "create" ? ["create"] : [action, action === "cancel" ? "JOB" : "NAME"]);
  const request = action === "create" ? buildRequest(values) : undefined;
  const jobId = action === "cancel" ? parseJobId(arg) : undefined;
  const template = action === "approve-template" ? templateArg(arg, "a template name") : undefined;
  const ctx = await openContext(values, true);
  try {
    if (request) return await create(ctx, request, values["dry-run"]);
    if (jobId !== undefined) return await cancel(ctx, jobId, values["dry-run"]);
    return await approveTemplate(ctx, template!, values["dry-run"]);
  } catch (err) {
    if (err instanceof CommandError) throw err;
    console.error(`gpuchain: job ${action} failed: ${describeError(err, protocolInterfaces().escrow)}`);
    return 1;
  } finally {
    ctx.close();
  }
}

export interface Request {
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
  const str = (k: string) => (typeof values[k] === "string" ? (values[k] as string) : undefined);
  const template = templateArg(str("template"), "--template");
  const totalSteps = parsePositiveInt(str("steps"), "steps");
  if (totalSteps > 0xffffffff) throw new UsageError(`--steps must be at most 4294967295, got "${totalSteps}"`);
  const checkpointInterval = parsePositiveInt(str("interval"), "interval", Math.min(50, totalSteps));
  if (checkpointInterval > totalSteps) {
    throw new UsageError(`--interval (${checkpointInterval}) cannot exceed --steps (${totalSteps})`);
  }
  const maxPricePerStep = parseUsdc(requireString(values["max-price"], "max-price"), "max-price");
  const budget = str("budget") ? parseUsdc(str("budget")!, "budget") : maxPricePerStep * BigInt(totalSteps);
  const disputeWindow = parseDuration(str("dispute-window"), "dispute-window", 300);
  const { min, max } = DISPUTE_WINDOW_BOUNDS;
  if (disputeWindow < min || disputeWindow > max) {
    throw new UsageError(
      `--dispute-window must be between ${formatDuration(min)} and ${formatDuration(max)}, ` +
        `got "${str("dispute-window")}" (${formatDuration(disputeWindow)})`,
    );
  }
  return {
    templateName: template.descriptor.name,
    templateId: template.templateId,
    totalSteps,
    checkpointInterval,
    maxPricePerStep,
    budget,
    disputeWindow,
  };
}

async function create(ctx: CommandContext, r: Request, dryRun: boolean): Promise<number> {
  const { escrow } = ctx.protocol;
  if (!(await escrow.isApprovedTemplate(r.templateId))) {
    console.error(
      `gpuchain: template ${r.templateName} (${r.templateId}) is not approved on escrow ${ctx.deployment.escrow}: ` +
        "its owner runs `gpuchain job approve-template NAME`",
    );
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
  console.log(
    `job: ${r.templateName}, ${r.totalSteps} steps, checkpoint every ${r.checkpointInterval}, ` +
      `≤ ${formatPrice(r.maxPricePerStep)}, budget ${formatUsdc(r.budget)}, ` +
      `dispute window ${formatDuration(r.disputeWindow)}`,
  );
  await warnIfNobodyFits(ctx, r);
  if (dryRun) return 0;
  const permit = await signPermit(ctx, r.budget).catch(() => undefined);
  const receipt = await confirm(
    ctx,
    permit
      ? escrow.createJobWithPermit(call, permit.deadline, permit.v, permit.r, permit.s)
      : approveThen(ctx, r.budget, () => escrow.createJob(call)),
    "create the job",
  );
  const created = receipt!.logs.map((l) => escrow.interface.parseLog(l)).find((e) => e?.name === "JobCreated");
  console.log(
    `created job ${created?.args.jobId} (tx ${receipt!.hash}); budget locked${permit ? " with a permit" : ""}`,
  );
  return 0;
}

async function approveThen<T>(ctx: CommandContext, amount: bigint, send: () => Promise<T>): Promise<T> {
  await confirm(ctx, ctx.protocol.usdc.approve(ctx.deployment.escrow, amount), "approve the budget");
  return send();
}

async function signPermit(ctx: CommandContext, value: bigint) {
  const signer = ctx.signer as Wallet;
  const token = ctx.protocol.usdc;
  const [name, nonce] = await Promise.all([token.name(), token.nonces(signer.address)]);
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const domain = { name, version: "1", chainId: ctx.chainId, verifyingContract: ctx.deployment.usdc };
  const types = {
    Permit: [
      { name: "owner", type: "address" },
      { name: "spender", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "uint256" },
      { name: "deadline", type: "uint256" },
    ],
  };
  const message = { owner: signer.address, spender: ctx.deployment.escrow, value, nonce, deadline };
  const sig = Signature.from(await signer.signTypedData(domain, types, message));
  return { deadline, v: sig.v, r: sig.r, s: sig.s };
}

async function cancel(ctx: CommandContext, jobId: bigint, dryRun: boolean): Promise<number> {
  const { escrow } = ctx.protocol;
  await requireJob(ctx, jobId);
  const status = statusName(await escrow.statusOf(jobId));
  if (status !== "Open") {
    console.error(`gpuchain: job ${jobId} is ${status}: only an Open job (no provider assigned) can be cancelled`);
    return 1;
  }
  if (dryRun) {
    console.log(`would cancel job ${jobId}`);
    return 0;
  }
  const receipt = await confirm(ctx, escrow.cancel(jobId), `cancel job ${jobId}`);
  console.log(
    `job ${jobId} cancelled (tx ${receipt!.hash}); the unspent budget is withdrawable with \`gpuchain withdraw\``,
  );
  return 0;
}

async function approveTemplate(
  ctx: CommandContext,
  t: ReturnType<typeof templateArg>,
  dryRun: boolean,
): Promise<number> {
  if (dryRun) {
    console.log(`would approve template ${t.descriptor.name} (${t.templateId})`);
    return 0;
  }
  const receipt = await confirm(
    ctx,
    ctx.protocol.escrow.setTemplateApproval(t.templateId, true),
    "approve the template",
  );
  console.log(`approved template ${t.descriptor.name} (${t.templateId}) (tx ${receipt!.hash})`);
  return 0;
}
