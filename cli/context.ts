/** What a one-shot command needs: an RPC provider, the deployment, the protocol handles and, if given, a signer. */
import type { Wallet } from "ethers";
import { connectProtocol, rpcProvider, type Protocol } from "../sdk/contracts.ts";
import { loadDeployment, type Deployment } from "../sdk/deployment.ts";
import { loadKey } from "../sdk/keys.ts";
import { UsageError } from "../sdk/args.ts";

export interface CommandContext {
  deployment: Deployment;
  protocol: Protocol;
  signer?: Wallet;
  close(): void;
}

export function openContext(values: { rpc?: string; deployment?: string; key?: string }, needsKey: boolean): CommandContext {
  if (process.versions.node.split(".").map(Number)[0] < 22) {
    throw new UsageError(`Node ${process.versions.node} is too old: run through npx/npm (the project ships Node 22)`);
  }
  if (needsKey && !values.key) throw new UsageError("--key FILE is required (a 0600 file holding the private key)");
  const deployment = loadDeployment(values.deployment!);
  const provider = rpcProvider(values.rpc!);
  const signer = values.key ? loadKey(values.key).connect(provider) : undefined;
  const protocol = connectProtocol(deployment, signer ?? provider);
  return { deployment, protocol, signer, close: () => provider.destroy() };
}

/** Formats test USDC base units (6 decimals) as a decimal string. */
export function usdc(units: bigint): string {
  const sign = units < 0n ? "-" : "";
  const abs = units < 0n ? -units : units;
  const frac = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${sign}${abs / 1_000_000n}${frac ? "." + frac : ""}`;
}

/** Parses a job id positional. */
export function jobIdArg(value: string | undefined): bigint {
  if (!value || !/^\d+$/.test(value) || BigInt(value) === 0n) throw new UsageError(`a job id (positive integer) is required, got "${value ?? ""}"`);
  return BigInt(value);
}
