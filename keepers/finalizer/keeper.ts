/** The finalizer as a registry entry (keepers/registry.ts). */
import { defineKeeper } from "../keeper.ts";
import { FINALIZER_OPTIONS, finalizerConfig } from "./config.ts";
import { runFinalizer } from "./tick.ts";

export const finalizer = defineKeeper({
  name: "finalizer",
  summary: "on a cron schedule: settle (Settleable / ArbiterTimedOut) and claimEarnings",
  help: ['--cron "*/10 * * * * *"'],
  options: FINALIZER_OPTIONS,
  sends: true,
  config: finalizerConfig,
  async prepare(ctx, config) {
    return (signal) => runFinalizer(ctx, config, signal);
  },
});
