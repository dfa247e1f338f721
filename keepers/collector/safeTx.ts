/**
 * `--via-safe-tx`: execute a decision as a real Safe transaction (the escrow accepts calls from the Safe itself)
 * instead of relaying EIP-1271 signatures. Needs `threshold` owners' keys on this machine, so it is for
 * emergencies and local networks, not the normal path; it also consumes the Safe's nonce, which is why decisions
 * of different jobs are otherwise relayed as signatures (docs/ARCHITECTURE.md). Built on @safe-global/protocol-kit.
 */
import SafeKit, { type ContractNetworksConfig, type Eip1193Provider } from "@safe-global/protocol-kit";
import type { Contract } from "ethers";
import type { Deployment } from "../../sdk/node/deployment.ts";
import { execute, type KeeperContext, type Sender } from "../chain.ts";
import type { DecisionExecutor } from "./tick.ts";

// At run time (ESM) the default import is the Safe class; TypeScript reads the package's types as CommonJS and
// sees the module object, whose `default` is the class.
type SafeClass = (typeof import("@safe-global/protocol-kit"))["default"];
const Safe = ("init" in SafeKit
  ? SafeKit
  : (SafeKit as unknown as { default: SafeClass }).default) as unknown as SafeClass;

export interface SafeTxOptions {
  /** An EIP-1193 provider or the RPC URL. */
  provider: Eip1193Provider | string;
  /** Owners' private keys (0x…); the first `threshold` of them sign, the first one pays for execution. */
  ownerKeys: string[];
  deployment: Pick<Deployment, "escrow" | "verifierSafe" | "safe">;
}

/** The signatures argument is last in every decision call; a call from the Safe itself carries none. */
function withoutSignatures(args: unknown[]): unknown[] {
  return [...args.slice(0, -1), "0x"];
}

export function safeTxSender(ctx: KeeperContext, opts: SafeTxOptions): Sender {
  const escrow = ctx.escrow as unknown as Contract;
  const contractNetworks: ContractNetworksConfig = { [ctx.chainId.toString()]: opts.deployment.safe };
  const init = (signer: string) =>
    Safe.init({ provider: opts.provider, signer, safeAddress: opts.deployment.verifierSafe, contractNetworks });
  return {
    async simulate(method, args) {
      // As the Safe would call it (a read through the provider: the keeper's signer is not the Safe).
      const asSafe = escrow.connect(ctx.provider) as Contract;
      await asSafe.getFunction(method).staticCall(...withoutSignatures(args), { from: opts.deployment.verifierSafe });
    },
    async send(method, args) {
      const data = escrow.interface.encodeFunctionData(method, withoutSignatures(args));
      const first = await init(opts.ownerKeys[0]);
      const threshold = await first.getThreshold();
      if (opts.ownerKeys.length < threshold) {
        throw new Error(`--via-safe-tx has ${opts.ownerKeys.length} owner keys; the Safe needs ${threshold}`);
      }
      let tx = await first.createTransaction({ transactions: [{ to: opts.deployment.escrow, value: "0", data }] });
      tx = await first.signTransaction(tx);
      for (const key of opts.ownerKeys.slice(1, threshold)) tx = await (await init(key)).signTransaction(tx);
      const result = await first.executeTransaction(tx);
      return {
        hash: result.hash,
        wait: async () => {
          const r = await ctx.provider.waitForTransaction(result.hash);
          return r ? { status: r.status, blockNumber: r.blockNumber, hash: r.hash } : null;
        },
      };
    },
  };
}

/** A collector executor that sends each decision as a Safe transaction. */
export function safeTxExecutor(ctx: KeeperContext, opts: SafeTxOptions): DecisionExecutor {
  const sender = safeTxSender(ctx, opts);
  return { execute: (call, log) => execute({ ...ctx, sender }, call, log) };
}
