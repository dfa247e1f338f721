/** The reserves watch as a registry entry (keepers/registry.ts). It only reads: no key needed. */
import { defineKeeper } from "../keeper.ts";
import { RESERVES_OPTIONS, reservesConfig } from "./config.ts";
import { runReservesWatch } from "./tick.ts";

export const reserves = defineKeeper({
  name: "reserves",
  summary: "every new block: held vs owed; logs PROOF OF RESERVES FAILED if held < owed",
  help: ["--strict (exit 1 on a failed proof)  --max-blocks-per-tick N"],
  options: RESERVES_OPTIONS,
  sends: false,
  config: reservesConfig,
  async prepare(ctx, config) {
    return (signal) => runReservesWatch(ctx, config, signal);
  },
});
