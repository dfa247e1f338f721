/** `gpuchain reserves [--watch]`: proof of reserves, live — the escrow's token balance against everything it owes. */
import { parseCommand } from "../sdk/args.ts";
import { openContext, usdc } from "./context.ts";

export async function main(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, { watch: { type: "boolean", default: false } });
  const ctx = openContext(values, false);
  try {
    const { escrow } = ctx.protocol;
    const [held, owes] = await escrow.reserves();
    const [locked, bonds, withdrawable] = await Promise.all([escrow.totalLocked(), escrow.totalBonds(), escrow.totalWithdrawable()]);
    const ok = held >= owes;
    console.log(`escrow:        ${ctx.deployment.escrow}`);
    console.log(`held:          ${usdc(held)} USDC`);
    console.log(`owed:          ${usdc(owes)} USDC  (locked budgets ${usdc(locked)} + bonds ${usdc(bonds)} + withdrawable ${usdc(withdrawable)})`);
    console.log(`surplus:       ${usdc(held - owes)} USDC`);
    console.log(`proof of reserves: ${ok ? "HOLDS" : "FAILED"}`);
    return ok ? 0 : 1;
  } finally {
    ctx.close();
  }
}
