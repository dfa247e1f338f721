/** Builds a KeeperContext from a deployment, a provider and (optionally) a signer: the CLI and the tests share it. */
import { BaseWallet, Contract as EthersContract, type Contract, type Provider, type Signer } from "ethers";
import { connectProtocol } from "../sdk/node/contracts.ts";
import type { Deployment } from "../sdk/node/deployment.ts";
import type { Logger } from "../sdk/run/log.ts";
import { batchReader, MULTICALL3_ABI } from "../sdk/node/multicall.ts";
import { managedWallet } from "../sdk/node/txManager.ts";
import {
  contractSender,
  DEFAULT_RETRY,
  SendQueue,
  type KeeperContext,
  type RetryPolicy,
  type Sender,
} from "./chain.ts";

export interface ContextOptions {
  deployment: Deployment;
  provider: Provider;
  chainId: bigint;
  logger: Logger;
  /** The keeper's key; without one the keeper can only decide (dry run) or watch. */
  signer?: Signer;
  dryRun?: boolean;
  txTimeoutMs?: number;
  rpcTimeoutMs?: number;
  retry?: RetryPolicy;
  nowMs?: () => number;
  /** Shared by every keeper that sends with the same key in one process (one nonce sequence). */
  sendQueue?: SendQueue;
  /** Replaces the default sender (tests inject failures here). */
  sender?: (base: Sender) => Sender;
}

export async function keeperContext(o: ContextOptions): Promise<KeeperContext> {
  // A key's sends go through its one transaction manager in this process (nonces, fees, speed-ups, reorgs).
  const signer = o.signer instanceof BaseWallet ? managedWallet(o.signer, o.provider, { logger: o.logger }) : o.signer;
  o = { ...o, signer };
  const protocol = connectProtocol(o.deployment, o.signer ?? o.provider);
  const queue = o.sendQueue ?? new SendQueue();
  const base = contractSender(protocol.escrow as unknown as Contract, queue);
  const multicall = new EthersContract(o.deployment.multicall3, MULTICALL3_ABI, o.signer ?? o.provider);
  return {
    chainId: o.chainId,
    firstBlock: o.deployment.firstBlock,
    escrow: protocol.escrow,
    registry: protocol.registry,
    provider: o.provider,
    sender: o.sender ? o.sender(base) : base,
    address: o.signer ? await o.signer.getAddress() : undefined,
    logger: o.logger,
    nowMs: o.nowMs ?? Date.now,
    dryRun: o.dryRun ?? false,
    txTimeoutMs: o.txTimeoutMs ?? 60_000,
    rpcTimeoutMs: o.rpcTimeoutMs ?? 15_000,
    retry: o.retry ?? DEFAULT_RETRY,
    batch: batchReader(o.provider, o.deployment.multicall3),
    batchSender: o.signer ? contractSender(multicall, queue) : undefined,
  };
}
