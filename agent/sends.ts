/**
 * The agent's transactions that write `block.timestamp` (report, heartbeat): sent with a limit over the estimate,
 * because an estimate made within the second of the previous write is short (sdk/node/gas.ts says why).
 */
import type { ContractTransactionResponse } from "ethers";
import type { JobEscrow } from "../types/ethers-contracts/index.ts";
import { sendWithHeadroom } from "../sdk/node/gas.ts";

export function sendReport(
  escrow: JobEscrow,
  jobId: bigint,
  epoch: bigint,
  step: number,
  hash: string,
): Promise<ContractTransactionResponse> {
  return sendWithHeadroom(escrow.reportCheckpoint, jobId, epoch, step, hash);
}

export function sendHeartbeat(escrow: JobEscrow, jobId: bigint, epoch: bigint): Promise<ContractTransactionResponse> {
  return sendWithHeadroom(escrow.heartbeat, jobId, epoch);
}
