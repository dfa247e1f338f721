/**
 * `gpuchain job create|cancel|approve-template`: the client's side of a job.
 * The client locks its budget with an EIP-2612 permit in the same transaction when the token supports it.
 */
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
} from "../sdk/run/args.ts";
import {
  approveIfNeeded,
  confirm,
  openContext,
  requireBalance,
  requireJob,
  requireKeyIs,
  runOnChain,
  templateArg,
  type CommandContext,
} from "./context.ts";
import { statusName } from "../sdk/rules/job.ts";
import { signPermit } from "../sdk/rules/permit.ts";
import { formatDuration, formatPrice, formatUsdc } from "../sdk/words/format.ts";
import { warnIfNobodyFits } from "./fit.ts";
import { amount, emitJson, JSON_OPTION } from "./json.ts";
import { getAddress } from "ethers";
import { templateStepBoundMs } from "../keepers/coordinator/stepTime.ts";

export const USAGE = `usage: gpuchain job <create|cancel|approve-template> [options]

  job create --template NAME --steps N --max-price USDC --key FILE [--interval N] [--budget USDC]
             [--dispute-window DURATION]
      post a job and lock its budget (default budget: max price × steps; interval: min(50, steps);
      dispute window: 300 s, between 60 s and 30 d, written 300, 90s, 5m, 2h or 3d)
  job cancel JOB --key FILE              cancel an Open job (no provider yet); the budget becomes withdrawable
  job approve-template NAME --key FILE   the escrow owner approves a workload template

  --json: what was done (or, with --dry-run, would be) as one JSON document (README.md, "Machine-readable output")
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

const OPTIONS = {
  template: { type: "string" },
  steps: { type: "string" },
  interval: { type: "string" },
  "max-price": { type: "string" },
  budget: { type: "string" },
  "dispute-window": { type: "string" },
  ...JSON_OPTION,
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
  return runOnChain(ctx, `job ${action}`, async () => {
    const out = values.json ? emitJson : () => {};
    if (request) return await create(ctx, request, values["dry-run"], out);
    if (jobId !== undefined) return await cancel(ctx, jobId, values["dry-run"], out);
    return await approveTemplate(ctx, template!, values["dry-run"], out);
  });
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

type Out = (doc: unknown) => void;

async function create(ctx: CommandContext, r: Request, dryRun: boolean, out: Out): Promise<number> {
  const { escrow } = ctx.protocol;
  if (!(await escrow.isApprovedTemplate(r.templateId))) {
    throw new CommandError(
      `template ${r.templateName} (${r.templateId}) is not approved on escrow ${ctx.deployment.escrow}: ` +
        `its owner runs \`gpuchain job approve-template ${r.templateName}\``,
    );
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
  await requireBalance(ctx, r.budget, "the job's budget");
  const report = (jobId: bigint | null, tx: string | null, permit: boolean) => ({
    action: "create",
    dryRun,
    jobId,
    tx,
    client: getAddress(ctx.signer!.address),
    template: r.templateName,
    templateId: r.templateId,
    totalSteps: r.totalSteps,
    checkpointInterval: r.checkpointInterval,
    ...amount("maxPricePerStep", r.maxPricePerStep),
    ...amount("budget", r.budget),
    disputeWindowSeconds: r.disputeWindow,
    budgetLockedWithPermit: permit,
  });
  if (dryRun) {
    out(report(null, null, false));
    return 0;
  }
  const permit = await permitFor(ctx, r.budget).catch(() => undefined);
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
  out(report(created!.args.jobId as bigint, receipt!.hash, permit !== undefined));
  return 0;
}

async function approveThen<T>(ctx: CommandContext, amount: bigint, send: () => Promise<T>): Promise<T> {
  await approveIfNeeded(ctx, amount, "approve the budget");
  return send();
}

/** One hour to land the permit, as a person waits for the create transaction. */
function permitFor(ctx: CommandContext, value: bigint) {
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
  return signPermit(ctx.signer!, ctx.protocol.usdc, {
    spender: ctx.deployment.escrow,
    value,
    deadline,
    chainId: ctx.chainId,
  });
}

async function cancel(ctx: CommandContext, jobId: bigint, dryRun: boolean, out: Out): Promise<number> {
  const { escrow } = ctx.protocol;
  await requireJob(ctx, jobId);
  const status = statusName(await escrow.statusOf(jobId));
  if (status !== "Open") {
    throw new CommandError(`job ${jobId} is ${status}: only an Open job (no provider assigned) can be cancelled`);
  }
  requireKeyIs(ctx, (await escrow.jobOf(jobId)).client, `job ${jobId}'s client`, "cancel it");
  if (dryRun) {
    console.log(`would cancel job ${jobId}`);
    out({ action: "cancel", dryRun, jobId, tx: null });
    return 0;
  }
  const receipt = await confirm(ctx, escrow.cancel(jobId), `cancel job ${jobId}`);
  console.log(
    `job ${jobId} cancelled (tx ${receipt!.hash}); the unspent budget is withdrawable with \`gpuchain withdraw\``,
  );
  out({ action: "cancel", dryRun, jobId, tx: receipt!.hash });
  return 0;
}

async function approveTemplate(
  ctx: CommandContext,
  t: ReturnType<typeof templateArg>,
  dryRun: boolean,
  out: Out,
): Promise<number> {
  requireKeyIs(ctx, await ctx.protocol.escrow.owner(), "the escrow's owner", "approve a template");
  const report = (tx: string | null) => ({
    action: "approve-template",
    dryRun,
    template: t.descriptor.name,
    templateId: t.templateId,
    tx,
  });
  if (dryRun) {
    console.log(`would approve template ${t.descriptor.name} (${t.templateId})`);
    out(report(null));
    return 0;
  }
  const receipt = await confirm(
    ctx,
    ctx.protocol.escrow.setTemplateApproval(t.templateId, true),
    "approve the template",
  );
  console.log(`approved template ${t.descriptor.name} (${t.templateId}) (tx ${receipt!.hash})`);
  // Its step bound: the on-chain measure of a stalled hold, which prices a newcomer's (templateStepBoundMs).
  const bound = templateStepBoundMs(t);
  await confirm(ctx, ctx.protocol.escrow.setTemplateStepBound(t.templateId, bound), "set the template's step bound");
  console.log(`step bound ${bound} ms a step: a job's progress timeout is its interval × this (at least a lease)`);
  out(report(receipt!.hash));
  return 0;
}
