import type { Run } from "./run.ts";
import type { ChainHealth, ChainReader } from "./sources/chain.ts";
import type { DashboardConfig } from "./sources/config.ts";
import type { View } from "./url.ts";

/** What every page gets: the run (live or recorded), the network, the browser's chain reader and the view. */
export interface PageProps {
  run: Run;
  config: DashboardConfig | null;
  chain: ChainReader | null;
  health: ChainHealth;
  recorded: boolean;
  view: View;
  go(patch: Partial<View>): void;
}
