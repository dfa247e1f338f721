/**
 * Proof of reserves as people read it, one home for `gpuchain reserves` and the dashboard's On-chain page: what
 * the escrow and the registry hold, what they owe, and the parts of what they owe — locked budgets, dispute bonds,
 * withdrawable balances and the registry's stakes — which add up to it (IJobEscrow `reserves()`). Browser-safe.
 */
import { formatUsdc } from "../words/format.ts";

export interface Reserves {
  held: bigint;
  owes: bigint;
  locked: bigint;
  bonds: bigint;
  withdrawable: bigint;
  staked: bigint;
}

type View = (overrides: { blockTag?: number | string }) => Promise<unknown>;

/** The escrow's and the registry's views `readReserves` calls (typed contracts and plain ethers ones fit). */
export interface ReservesSource {
  escrow: { reserves: View; totalLocked: View; totalBonds: View; totalWithdrawable: View };
  registry: { totalStaked: View };
}

/** All six at one block (default: the latest). */
export async function readReserves(src: ReservesSource, blockTag: number | string = "latest"): Promise<Reserves> {
  const at = { blockTag };
  const [r, locked, bonds, withdrawable, staked] = await Promise.all([
    src.escrow.reserves(at) as Promise<readonly [bigint, bigint]>,
    src.escrow.totalLocked(at),
    src.escrow.totalBonds(at),
    src.escrow.totalWithdrawable(at),
    src.registry.totalStaked(at),
  ]);
  return {
    held: BigInt(r[0]),
    owes: BigInt(r[1]),
    locked: BigInt(locked as bigint),
    bonds: BigInt(bonds as bigint),
    withdrawable: BigInt(withdrawable as bigint),
    staked: BigInt(staked as bigint),
  };
}

/** The parts of what is owed, in the order `reserves()` sums them: "locked budgets … + bonds … + … + stakes …". */
export function owedParts(r: Reserves, amount: (units: bigint) => string = formatUsdc): string {
  return (
    `locked budgets ${amount(r.locked)} + bonds ${amount(r.bonds)} + withdrawable ${amount(r.withdrawable)} + ` +
    `stakes ${amount(r.staked)}`
  );
}
