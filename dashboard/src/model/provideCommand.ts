// The Provide compute page's one command for this network (pure: the page renders it, tests read it).
import type { DashboardConfig } from "../sources/config.ts";

export function provideCommand(
  c: DashboardConfig | null | undefined,
  name: string,
  priceText: string,
  cap: string,
): string {
  // The store's endpoint and test key pair first (without them every upload failed).
  const pair = c?.storeTestKeyPair ? EMBEDDED_S3_TEST_PAIR : {};
  const env = Object.entries({ ...c?.storeEnv, ...pair }).map(([k, v]) => `${k}=${v}`);
  const parts = [...env, "npx gpuchain provide", `--name ${name}`, `--price ${priceText}`];
  if (cap) parts.push(`--memory-cap ${cap}`);
  if (c) {
    parts.push(
      `--rpc ${c.rpc}`,
      `--deployment ${c.deploymentFile}`,
      `--coordinator ${c.coordinator}/heartbeat`,
      `--store ${c.store ?? STORE_UNKNOWN}`,
    );
    // A development chain's own faucet: the copied command gets its gas with no hand step (issue 21).
    if (c.chainId === LOCAL_CHAIN) parts.push("--faucet");
  }
  return parts.join(" ");
}

const LOCAL_CHAIN = "31337";
/**
 * The embedded S3 server's published test key pair (s3rver's default, workloads/store/embedded.ts): /api/config
 * carries no keys, only whether the store is that server.
 */
export const EMBEDDED_S3_TEST_PAIR = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" } as const;
/** In the command when the dashboard was started without --store: the one word the person must fill in. */
export const STORE_UNKNOWN = "STORE_URL";

/** Words of the command that hold this machine's loopback address or a local path: replaced on another machine. */
export function machineLocal(word: string): boolean {
  return /127\.0\.0\.1|localhost|\[::1\]/.test(word) || /--deployment /.test(word) || word.includes(STORE_UNKNOWN);
}
