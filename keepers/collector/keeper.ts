/** The verdict collector as a registry entry (keepers/registry.ts). */
import { loadKey } from "../../sdk/run/keys.ts";
import type { KeeperContext } from "../chain.ts";
import { defineKeeper, type KeeperEnv } from "../keeper.ts";
import { COLLECTOR_OPTIONS, collectorConfig, type CollectorConfig } from "./config.ts";
import { runCollector, type CollectorDeps } from "./tick.ts";

export const collector = defineKeeper({
  name: "collector",
  summary: "POST /signatures, /claims (default :8601); relays 2-of-3 verifier decisions to the escrow",
  help: [
    "--port N  --host H  --state-file FILE (default .gpuchain/collector-state.json)",
    "--claim-hold-ms MS (default 120000: the longest fault claims hold a checkpoint's plain decision, per checkpoint)",
    "--quorum-wait-ms MS (default 15000: how long a 2-of-3 accept waits for the third verifier's word)",
    "--silent-after-decided N --silent-after-ms MS (default 3, 60000: an owner that posted nothing while N",
    "  checkpoints were decided and MS passed is silent: not waited for, until its next post)",
    "--via-safe-tx --owner-key FILE (repeatable: execute as a Safe transaction signed by those owners)",
    "--confirmations N (default: the network's, local 0: a decision goes out once the block N below the head needs it)",
  ],
  options: COLLECTOR_OPTIONS,
  sends: true,
  config: collectorConfig,
  async prepare(ctx, config, env) {
    const deps = await collectorDeps(ctx, config, env);
    return (signal) => runCollector(ctx, config, deps, signal);
  },
});

async function collectorDeps(ctx: KeeperContext, config: CollectorConfig, env: KeeperEnv): Promise<CollectorDeps> {
  const deps = { safeAddress: env.deployment.verifierSafe, escrowAddress: env.deployment.escrow };
  if (!config.viaSafeTx) return deps;
  // protocol-kit (and viem) take seconds to load: only when asked for.
  const { safeTxExecutor } = await import("./safeTx.ts");
  const ownerKeys = config.ownerKeys.map((file) => loadKey(file).privateKey);
  return { ...deps, executor: safeTxExecutor(ctx, { provider: env.rpc, ownerKeys, deployment: env.deployment }) };
}
