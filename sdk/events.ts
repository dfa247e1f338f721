/** Reads every escrow event from a block on and folds them into the ledger (sdk/ledger.ts). */
import type { Contract, Interface, Log } from "ethers";
import type { JobEscrow } from "../types/ethers-contracts/index.ts";
import { foldEscrowEvents, type EscrowEvent, type Ledger } from "./ledger.ts";
import { readLogsToHead } from "./logRange.ts";

/** Every event the escrow emitted from `fromBlock` on, folded into its books. */
export async function escrowLedger(escrow: JobEscrow, fromBlock = 0): Promise<Ledger> {
  const contract = escrow as unknown as Contract;
  const { logs } = await readLogsToHead(
    contract.runner!.provider!,
    { address: await contract.getAddress() },
    fromBlock,
  );
  return foldEscrowEvents(decodeLogs(contract.interface, logs));
}

/** Logs decoded with `iface` (others skipped), in the shape the ledger folds. */
export function decodeLogs(iface: Interface, logs: readonly Log[]): EscrowEvent[] {
  const out: EscrowEvent[] = [];
  for (const log of logs) {
    const parsed = safeParse(iface, log);
    if (parsed) out.push({ eventName: parsed.name, args: parsed.args, blockNumber: log.blockNumber, index: log.index });
  }
  return out;
}

function safeParse(iface: Interface, log: Log) {
  try {
    return iface.parseLog(log);
  } catch {
    return null;
  }
}
