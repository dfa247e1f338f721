/** What the dashboard server says about the network it watches (GET /api/config). */
export interface DashboardConfig {
  chainId: string;
  chainName: string;
  rpc: string;
  deploymentFile: string;
  deployment: { escrow: string; registry: string; usdc: string; verifierSafe: string };
  coordinator: string;
  collector: string;
  store: string;
  /** The environment the store needs (VAR → value), written in front of the Provide compute command. */
  storeEnv?: Record<string, string>;
  explorer?: string;
  recordings: { name: string; entries: number; date: string }[];
  serverStartedAt: number;
}

export async function loadConfig(): Promise<DashboardConfig | undefined> {
  try {
    const res = await fetch("api/config");
    if (!res.ok) return undefined;
    return (await res.json()) as DashboardConfig;
  } catch {
    return undefined;
  }
}
