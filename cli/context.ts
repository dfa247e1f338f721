/**
 * What a one-shot command needs: the deployment, a checked connection to its chain, the protocol handles and, if
 * given, a signer. Everything local (flags, key file, deployment file) is checked before the network is touched;
 * then the node must answer, be on the deployment's chain and have the contracts' code.
 */
import type { JsonRpcProvider, TransactionReceipt, TransactionResponse, Wallet } from "ethers";
import {
  checkRpcUrl,
  connectChecked,
  connectProtocol,
  DEFAULT_RPC_TIMEOUT_MS,
  protocolErrors,
  type Protocol,
} from "../sdk/node/contracts.ts";
import { explainError } from "../sdk/node/errors.ts";
import { loadDeployment, type Deployment } from "../sdk/node/deployment.ts";
import { loadKey } from "../sdk/run/keys.ts";
import { managedWallet, mined } from "../sdk/node/txManager.ts";
import { CommandError, COMMON_OPTIONS, parsePositiveInt, UsageError } from "../sdk/run/args.ts";
import { existsSync } from "node:fs";
import path from "node:path";
import { liveNetworkOf, liveNetworks, type LiveNetwork } from "./liveNetwork.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { listTemplates, loadTemplate } from "../workloads/templates.ts";
import type { Template } from "../workloads/types.ts";
import { UnknownTemplateError } from "../workloads/errors.ts";

export interface CommandContext {
  deployment: Deployment;
  protocol: Protocol;
  provider: JsonRpcProvider;
  chainId: bigint;
  signer?: Wallet;
  /** How long to wait for a sent transaction to be mined (--tx-timeout-ms). */
  txTimeoutMs: number;
  /** The `npm start` network this deployment is, when one runs from this folder: its keys' names. */
  live?: LiveNetwork;
  close(): void;
}

export interface ContextFlags {
  rpc?: string;
  deployment?: string;
  key?: string;
  "rpc-timeout-ms"?: string;
  "tx-timeout-ms"?: string;
}

export async function openContext(values: ContextFlags, needsKey: boolean): Promise<CommandContext> {
  if (process.versions.node.split(".").map(Number)[0] < 22) {
    throw new UsageError(`Node ${process.versions.node} is too old: run through npx/npm (the project ships Node 22)`);
  }
  if (needsKey && !values.key)
    throw new UsageError("--key FILE is required (a 0600 file holding the private key)", true);
  const timeoutMs = parsePositiveInt(values["rpc-timeout-ms"], "rpc-timeout-ms", DEFAULT_RPC_TIMEOUT_MS);
  const txTimeoutMs = parsePositiveInt(values["tx-timeout-ms"], "tx-timeout-ms", TX_TIMEOUT_MS);
  const target = chooseTarget(values);
  checkRpcUrl(target.rpc);
  const wallet = values.key ? loadKey(values.key) : undefined;
  const deployment = loadTarget(target.deployment, values.deployment === COMMON_OPTIONS.deployment.default);
  const live = liveNetworkOf(target.deployment);
  const { provider, chainId } = await connectChecked(target.rpc, deployment, timeoutMs);
  const signer = wallet && managedWallet(wallet, provider); // fees with a cap, speed-ups, the key's nonce lock
  const protocol = connectProtocol(deployment, signer ?? provider);
  return { deployment, protocol, provider, chainId, signer, txTimeoutMs, live, close: () => provider.destroy() };
}

/**
 * Where the command goes: --rpc and --deployment as given; with neither (both at their defaults), the newest network
 * `npm start` runs from this folder (cli/liveNetwork.ts), said on standard error, else the defaults.
 */
export function chooseTarget(values: ContextFlags): { rpc: string; deployment: string } {
  const given = { rpc: values.rpc ?? COMMON_OPTIONS.rpc.default, deployment: values.deployment! };
  const defaults = given.rpc === COMMON_OPTIONS.rpc.default && values.deployment === COMMON_OPTIONS.deployment.default;
  if (!defaults) return given;
  const [live, ...others] = liveNetworks();
  if (!live) return given;
  const deployment = path.relative(process.cwd(), live.deploymentFile) || live.deploymentFile;
  const more = others.length ? ` (the newest of ${others.length + 1} running)` : "";
  console.error(
    `using the network npm start runs (process ${live.pid})${more}: --rpc ${live.rpc} --deployment ${deployment}`,
  );
  return { rpc: live.rpc, deployment: live.deploymentFile };
}

/** The deployment file; a missing default says how to reach a network `npm start` runs. */
function loadTarget(file: string, isDefault: boolean): Deployment {
  if (isDefault && !existsSync(file)) {
    throw new CommandError(
      `no deployment file at ${file}: deploy first (npx hardhat ignition deploy …) or pass --deployment FILE; ` +
        "a network `npm start -- --keep` runs is found by itself when the command runs from the folder npm start " +
        "ran in, with neither --rpc nor --deployment (its hints print both)",
    );
  }
  return loadDeployment(file);
}

/** The job must exist on this escrow (ids run 1..jobCount). */
export async function requireJob(ctx: CommandContext, jobId: bigint): Promise<void> {
  const count = await ctx.protocol.escrow.jobCount();
  if (jobId > count) {
    const has = count === 0n ? "has no jobs yet" : `has jobs 1 to ${count}`;
    throw new CommandError(`job ${jobId} does not exist: escrow ${ctx.deployment.escrow} ${has}`);
  }
}

/** Only `holder` (the job's client, the arbiter, the owner: `who`) may `act`; checked before anything is sent. */
export function requireKeyIs(ctx: CommandContext, holder: string, who: string, act: string): void {
  const me = ctx.signer!.address;
  if (holder.toLowerCase() !== me.toLowerCase()) {
    throw new CommandError(`only ${who} ${holder} may ${act}; this key is ${me}`);
  }
}

/**
 * The key must hold `amount` of the token before anything is sent for `what`: a short balance is said in one line,
 * before an approval's gas is spent on a transfer that would fail.
 */
export async function requireBalance(ctx: CommandContext, amount: bigint, what: string): Promise<void> {
  const me = ctx.signer!.address;
  const held = await ctx.protocol.usdc.balanceOf(me);
  if (held < amount) {
    throw new CommandError(
      `${what} needs ${formatUsdc(amount)} and ${me} holds ${formatUsdc(held)} ` +
        `(on a development chain: gpuchain faucet ${me} --usdc N)`,
    );
  }
}

/** Lets the escrow take `amount` of the key's token, unless it already may (an approval is a transaction). */
export async function approveIfNeeded(ctx: CommandContext, amount: bigint, what: string): Promise<void> {
  const allowance = await ctx.protocol.usdc.allowance(ctx.signer!.address, ctx.deployment.escrow);
  if (allowance < amount) await confirm(ctx, ctx.protocol.usdc.approve(ctx.deployment.escrow, amount), what);
}

/** A workload template by name or templateId, or a one-line error listing the known ones. */
export function templateArg(nameOrId: string | undefined, what: string): Template {
  const known = listTemplates()
    .map((t) => t.descriptor.name)
    .join(", ");
  if (!nameOrId) throw new UsageError(`${what} is required: one of ${known} (or a 0x… template id)`, true);
  const isId = /^0x[0-9a-fA-F]{64}$/.test(nameOrId);
  if (nameOrId.startsWith("0x") && !isId) {
    throw new UsageError(
      `${what} "${nameOrId}" is not a template id (0x followed by 64 hex digits) nor a name (${known})`,
    );
  }
  try {
    return loadTemplate(nameOrId);
  } catch (err) {
    if (!(err instanceof UnknownTemplateError)) throw err;
    const kind = isId ? "template id" : "template";
    throw new UsageError(`unknown ${kind} "${nameOrId}": known templates are ${known}`);
  }
}

/** How long a command waits for its transaction to be mined before saying so (it may still land later). */
export const TX_TIMEOUT_MS = 120_000;

/** Sends are progress a person waits for: say what was sent, then wait for the block (bounded). */
export async function confirm(
  ctx: CommandContext,
  sent: Promise<TransactionResponse>,
  what: string,
): Promise<TransactionReceipt> {
  const timeoutMs = ctx.txTimeoutMs;
  const tx = await sent;
  console.log(`${what}: sent ${tx.hash}, waiting for a block …`);
  try {
    return (await mined(tx, timeoutMs))!;
  } catch (err) {
    if ((err as { code?: string }).code !== "TIMEOUT") throw err;
    throw new CommandError(
      `${what}: transaction ${tx.hash} was not mined within ${timeoutMs / 1000} s; it may still land ` +
        "(a later `gpuchain explain` or `wallet` shows whether it did)",
    );
  }
}

/** A command's chain part: a revert or RPC failure becomes one line naming the escrow's error; the node is let go. */
export async function runOnChain(ctx: CommandContext, what: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof CommandError) throw err;
    throw new CommandError(`${what} failed: ${explainError(err, protocolErrors())}`);
  } finally {
    ctx.close();
  }
}
