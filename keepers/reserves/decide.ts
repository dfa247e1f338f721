/** Proof of reserves, pure: the escrow must hold at least what it owes (locked budgets, bonds, balances). */
export interface ReservesCheck {
  ok: boolean;
  held: bigint;
  owes: bigint;
  /** held − owes when ok, else 0. */
  surplus: bigint;
  /** owes − held when not ok, else 0. */
  deficit: bigint;
}

export function checkReserves(held: bigint, owes: bigint): ReservesCheck {
  const ok = held >= owes;
  return { ok, held, owes, surplus: ok ? held - owes : 0n, deficit: ok ? 0n : owes - held };
}

/** The blocks to check after `last` up to `latest`: every new block, at most `max` (the newest ones). */
export function blocksToCheck(
  last: number | undefined,
  latest: number,
  max: number,
): { blocks: number[]; skipped: number } {
  const from = last === undefined ? latest : last + 1;
  if (from > latest) return { blocks: [], skipped: 0 };
  const start = Math.max(from, latest - max + 1);
  const blocks: number[] = [];
  for (let b = start; b <= latest; b++) blocks.push(b);
  return { blocks, skipped: start - from };
}
