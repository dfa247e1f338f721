/**
 * How deep a block must be before an action that moves money relies on it: a block is final for such
 * actions once `depth` blocks were mined on top of it, i.e. at `head − depth`. Views (the dashboard, narration)
 * show the head at once and mark what is not confirmed yet; keepers that pay, settle or claim act on the state at
 * the confirmed block only.
 *
 * Defaults per network:
 * - local chains (Hardhat 31337, anvil): 0. One node mines every block; nothing reorganises it unless a test asks
 *   (`anvil_reorg`), and `npm start` must not wait for blocks that a node which mines on demand never makes.
 * - Base Sepolia (84532) and Base (8453): 3. An OP-stack chain's sequencer hands out "unsafe" blocks every 2 s;
 *   what a node serves at the very tip can still be replaced (a sequencer or node restart, a load-balanced RPC whose
 *   backends disagree about the tip for a block or two), while deeper replacement needs an L1 reorganisation or a
 *   batch-derivation failure. Three blocks (≈ 6 s) is a small price for a settle or a paid acceptance against
 *   those tip flips; it is not L1 finality (the `finalized` tag, minutes) — raise it with the flag or the
 *   environment where that matters.
 * - any other chain: 3, as for Base, until someone measures it.
 * `GPUCHAIN_CONFIRMATIONS` (or a keeper's `--confirmations`) overrides the default everywhere.
 */

export const CONFIRMATIONS_ENV = "GPUCHAIN_CONFIRMATIONS";

/** Blocks on top of a block before money actions rely on it, per chain id. */
export const DEFAULT_CONFIRMATIONS: Readonly<Record<string, number>> = {
  "31337": 0,
  "84532": 3,
  "8453": 3,
};

/** Any chain not listed above. */
export const OTHER_CHAIN_CONFIRMATIONS = 3;

/** Pure: a confirmation depth as typed (flag or environment); throws on anything but a whole number ≥ 0. */
export function parseConfirmations(value: string, where: string): number {
  if (!/^\d+$/.test(value.trim())) throw new Error(`${where} must be a whole number of blocks ≥ 0, got "${value}"`);
  return Number(value.trim());
}

/** The depth for `chainId`: an explicit value (flag), else the environment's, else the network's default. */
export function confirmationsFor(
  chainId: bigint | number,
  explicit?: number,
  env: Record<string, string | undefined> = process.env,
): number {
  if (explicit !== undefined) return explicit;
  const fromEnv = env[CONFIRMATIONS_ENV];
  if (fromEnv !== undefined && fromEnv !== "") return parseConfirmations(fromEnv, CONFIRMATIONS_ENV);
  return DEFAULT_CONFIRMATIONS[String(chainId)] ?? OTHER_CHAIN_CONFIRMATIONS;
}

/** Pure: the highest block final for money actions at `head` (−1: none yet). */
export function confirmedBlock(head: number, depth: number): number {
  return Math.max(-1, head - depth);
}

/** Pure: is `block` final for money actions at `head`? (at head − depth: yes; one block later: not yet). */
export function isConfirmed(block: number, head: number, depth: number): boolean {
  return block <= confirmedBlock(head, depth);
}
