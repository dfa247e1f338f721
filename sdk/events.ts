/** Reads every escrow event from a block on and folds them into the ledger (sdk/ledger.ts). */
import type { Contract } from "ethers";
import type { JobEscrow } from "../types/ethers-contracts/index.ts";
import { foldEscrowEvents, type EscrowEvent, type Ledger } from "./ledger.ts";

/** Every event the escrow emitted from `fromBlock` on, folded into its books. */
export async function escrowLedger(escrow: JobEscrow, fromBlock = 0): Promise<Ledger> {
  // TypeChain's typed overloads do not admit "*" (all events); the untyped Contract does.
  const logs = await (escrow as unknown as Contract).queryFilter("*", fromBlock);
  return foldEscrowEvents(logs as unknown as EscrowEvent[]);
}
