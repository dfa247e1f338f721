/**
 * `gpuchain faucet ADDRESS`: on a development node (anvil, a Hardhat node) gives an address test ETH for gas and,
 * optionally, test USDC — what a provider key started from the dashboard's command waits for on a local chain
 * (before, nothing said how to fund a key there). The ETH comes from the node's own balance-setting method; the
 * USDC from TestUSDC's open `mint`, sent by the node's first unlocked account. A node without those methods (a
 * public network) is refused with what to do instead: nothing is sent.
 */
import { formatEther, parseEther } from "ethers";
import { NotADevNodeError, setDevBalance } from "../sdk/node/faucet.ts";
import { expectPositionals, parseAddress, parseCommand, parseUsdc, UsageError, CommandError } from "../sdk/run/args.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { confirm, openContext, runOnChain, type CommandContext } from "./context.ts";

export const USAGE = `usage: gpuchain faucet ADDRESS [--eth N] [--usdc N]

  on a development chain (anvil, a Hardhat node): adds N test ETH for gas to ADDRESS (default 1) and, with
  --usdc, mints N test USDC to it (for a client's budget or a provider's stake beyond its own faucet use);
  refused on a node that is not a development node (a public network: send ETH from a funded key)
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

/** The most a faucet call adds: enough for thousands of transactions, not a way to mint a fortune by typo. */
const MAX_ETH = 100;

export function parseEth(value: string | undefined): bigint {
  if (value === undefined) return parseEther("1");
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0 || Number(value) > MAX_ETH)
    throw new UsageError(`--eth must be an amount of ETH above 0 and at most ${MAX_ETH}, like 0.5, got "${value}"`);
  return parseEther(value);
}

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, { eth: { type: "string" }, usdc: { type: "string" } });
  expectPositionals(positionals, ["ADDRESS"]);
  const to = parseAddress(positionals[0], "ADDRESS");
  const eth = parseEth(values.eth);
  const usdc = values.usdc === undefined ? 0n : parseUsdc(values.usdc, "usdc");
  const ctx = await openContext(values, false);
  return runOnChain(ctx, "faucet", async () => {
    const before = await ctx.provider.getBalance(to);
    if (values["dry-run"]) {
      console.log(`would add ${formatEther(eth)} ETH${usdc ? ` and ${formatUsdc(usdc)}` : ""} to ${to}`);
      return 0;
    }
    try {
      await setDevBalance(ctx.provider, to, before + eth);
    } catch (err) {
      if (err instanceof NotADevNodeError) throw new CommandError(err.message);
      throw err;
    }
    const parts = [`${formatEther(eth)} test ETH (now ${formatEther(await ctx.provider.getBalance(to))})`];
    if (usdc > 0n) {
      await mintFromNode(ctx, to, usdc);
      parts.push(`${formatUsdc(usdc)} (now ${formatUsdc(await ctx.protocol.usdc.balanceOf(to))})`);
    }
    console.log(`gave ${to} ${parts.join(" and ")} on chain ${ctx.chainId}`);
    return 0;
  });
}

/** TestUSDC's open mint, sent by the node's first unlocked account (a development node signs for it). */
async function mintFromNode(ctx: CommandContext, to: string, amount: bigint): Promise<void> {
  const accounts = (await ctx.provider.send("eth_accounts", [])) as string[];
  if (accounts.length === 0) throw new CommandError("the node has no unlocked account to send the USDC mint from");
  const signer = await ctx.provider.getSigner(accounts[0]);
  await confirm(ctx, ctx.protocol.usdc.connect(signer).mint(to, amount), "mint test USDC");
}
