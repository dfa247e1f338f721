/** The finalizer as a registry entry (keepers/registry.ts). */
import { defineKeeper } from "../keeper.ts";
import { FINALIZER_OPTIONS, finalizerConfig } from "./config.ts";
import { runFinalizer } from "./tick.ts";

export const finalizer = defineKeeper({
  name: "finalizer",
  summary: "on a cron schedule and at each passed deadline: settle (Settleable / ArbiterTimedOut), claimEarnings",
  help: ['--cron "*/10 * * * * *"  --watch-ms 1000  --confirmations N (default: the network\'s, local 0)'],
  options: FINALIZER_OPTIONS,
  sends: true,
  config: finalizerConfig,
  async prepare(ctx, config) {
    return (signal) => runFinalizer(ctx, config, signal);
  },
});
