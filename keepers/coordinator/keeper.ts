/** The coordinator as a registry entry (keepers/registry.ts). */
import type { KeeperContext } from "../chain.ts";
import { defineKeeper } from "../keeper.ts";
import { COORDINATOR_OPTIONS, coordinatorConfig } from "./config.ts";
import { runCoordinator } from "./tick.ts";

export const coordinator = defineKeeper({
  name: "coordinator",
  summary: "POST /heartbeat (default :8600); unassigns silent providers, assigns Open jobs (needs the coordinator key)",
  help: [
    "--port N  --host H  --heartbeat-timeout-ms N (default 5000)  --start-grace-ms N (default 20000)",
    "--max-clock-skew-ms N  --min-memory MiB  --template-memory TEMPLATE_ID=MiB (repeatable)",
    "--progress-floor-ms N (default 10000)  --idle-backoff-s N (default 60)  --idle-backoff-cap-s N (default 3600)",
  ],
  options: COORDINATOR_OPTIONS,
  sends: true,
  config: coordinatorConfig,
  async prepare(ctx, config) {
    await warnIfNotCoordinator(ctx);
    return (signal) => runCoordinator(ctx, config, signal);
  },
});

async function warnIfNotCoordinator(ctx: KeeperContext): Promise<void> {
  const coordinator = await ctx.escrow.coordinator();
  if (ctx.address && ctx.address.toLowerCase() !== coordinator.toLowerCase()) {
    ctx.logger.warn("this key is not the escrow's coordinator: it will only unassign providers whose lease lapsed", {
      key: ctx.address,
      coordinator,
    });
  }
}
