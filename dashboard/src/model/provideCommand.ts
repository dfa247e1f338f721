// The Provide compute page's one command for this network (pure: the page renders it, tests read it).
import type { DashboardConfig } from "../sources/config.ts";
import { gpuchainCommand, shellWord, withdrawCommand } from "../../../sdk/words/commandLine.ts";

export function provideCommand(
  c: DashboardConfig | null | undefined,
  name: string,
  priceText: string,
  cap: string,
): string {
  // The store's endpoint and test key pair first (without them every upload failed).
  const pair = c?.storeTestKeyPair ? EMBEDDED_S3_TEST_PAIR : {};
  const env = Object.entries({ ...c?.storeEnv, ...pair }).map(([k, v]) => `${k}=${v}`);
  const abs = c?.absolute;
  // From any folder: this installation's bin (npx --prefix), and every path absolute.
  const parts = [...env, `${gpuchainCommand(abs?.install)} provide`, `--name ${name}`, `--price ${priceText}`];
  if (cap) parts.push(`--memory-cap ${cap}`);
  if (c) {
    const key = providerKeyFile(c, name);
    parts.push(
      ...(key ? [`--key ${shellWord(key)}`] : []),
      `--rpc ${c.rpc}`,
      `--deployment ${shellWord(abs?.deploymentFile ?? c.deploymentFile)}`,
      `--coordinator ${c.coordinator}/heartbeat`,
      `--store ${shellWord(abs ? (abs.store ?? STORE_UNKNOWN) : (c.store ?? STORE_UNKNOWN))}`,
    );
    // A development chain's own faucet: the copied command gets its gas with no hand step.
    if (c.chainId === LOCAL_CHAIN) parts.push("--faucet");
  }
  return parts.join(" ");
}

/**
 * The provider key the command names: `gpuchain provide`'s own default (.gpuchain/providers/NAME/key) under this
 * installation, absolute, so the same key is used whichever folder the command runs from. Undefined from a server
 * that does not say its installation folder (the agent's default then: relative to where it runs).
 */
export function providerKeyFile(c: DashboardConfig | null | undefined, name: string): string | undefined {
  const install = c?.absolute?.install;
  if (!install) return undefined;
  const safeName = name.replace(/[^A-Za-z0-9._-]/g, "_"); // agent/cli.ts parseProvideArgs
  return `${install.replace(/\/+$/, "")}/.gpuchain/providers/${safeName}/key`;
}

/** The command that claims this provider's earnings and withdraws them (the same key, RPC and deployment). */
export function providerWithdrawCommand(c: DashboardConfig | null | undefined, name: string): string {
  if (!c) return withdrawCommand({ key: "KEY_FILE", rpc: "RPC_URL", deployment: "DEPLOYMENT_FILE" });
  return withdrawCommand({
    install: c.absolute?.install,
    key: providerKeyFile(c, name) ?? `.gpuchain/providers/${name}/key`,
    rpc: c.rpc,
    deployment: c.absolute?.deploymentFile ?? c.deploymentFile,
  });
}

const LOCAL_CHAIN = "31337";
/**
 * The embedded S3 server's published test key pair (s3rver's default, workloads/store/embedded.ts): /api/config
 * carries no keys, only whether the store is that server.
 */
export const EMBEDDED_S3_TEST_PAIR = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" } as const;
/** In the command when the dashboard was started without --store: the one word the person must fill in. */
export const STORE_UNKNOWN = "STORE_URL";

/**
 * Words of the command that hold this machine's loopback address or a local path (the installation, the key, the
 * deployment file, a folder store): replaced on another machine.
 */
export function machineLocal(word: string): boolean {
  return (
    /127\.0\.0\.1|localhost|\[::1\]/.test(word) ||
    /--(deployment|prefix|key) /.test(word) ||
    /--store \/|--store '\//.test(word) ||
    word.includes(STORE_UNKNOWN)
  );
}
