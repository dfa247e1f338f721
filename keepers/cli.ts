/**
 * `gpuchain keeper coordinator|collector|finalizer|reserves|all [options]`: the keepers as long-running processes.
 * Exports `main(argv)` for the `gpuchain` dispatcher (cli/gpuchain.ts).
 */
import { DeploymentError, loadDeployment } from "../sdk/deployment.ts";
import { connectChecked } from "../sdk/contracts.ts";
import { KeyFileError, loadKey } from "../sdk/keys.ts";
import { createLogger, type Logger } from "../sdk/log.ts";
import { UsageError, parseCommand } from "../sdk/args.ts";
import { SendQueue, type KeeperContext } from "./chain.ts";
import { SHARED_OPTIONS, type FlagValues } from "./config.ts";
import { keeperContext } from "./context.ts";
import { COLLECTOR_OPTIONS, collectorConfig, type CollectorConfig } from "./collector/config.ts";
import { runCollector } from "./collector/run.ts";
import { COORDINATOR_OPTIONS, coordinatorConfig } from "./coordinator/config.ts";
import { runCoordinator } from "./coordinator/tick.ts";
import { FINALIZER_OPTIONS, finalizerConfig } from "./finalizer/config.ts";
import { runFinalizer } from "./finalizer/tick.ts";
import { RESERVES_OPTIONS, reservesConfig } from "./reserves/config.ts";
import { runReservesWatch } from "./reserves/watch.ts";
import { shutdownSignal } from "./runner.ts";

const KEEPERS = ["coordinator", "collector", "finalizer", "reserves", "all"] as const;
type KeeperName = (typeof KEEPERS)[number];

const { port: _cp, ...COORDINATOR_NO_PORT } = COORDINATOR_OPTIONS;
const { port: _lp, ...COLLECTOR_NO_PORT } = COLLECTOR_OPTIONS;

const OPTIONS = {
  coordinator: { ...SHARED_OPTIONS, ...COORDINATOR_OPTIONS },
  collector: { ...SHARED_OPTIONS, ...COLLECTOR_OPTIONS },
  finalizer: { ...SHARED_OPTIONS, ...FINALIZER_OPTIONS },
  reserves: { ...SHARED_OPTIONS, ...RESERVES_OPTIONS },
  all: {
    ...SHARED_OPTIONS,
    ...COORDINATOR_NO_PORT,
    ...COLLECTOR_NO_PORT,
    ...FINALIZER_OPTIONS,
    ...RESERVES_OPTIONS,
    "coordinator-port": { type: "string" },
    "collector-port": { type: "string" },
  },
} as const;

export const USAGE = `usage: gpuchain keeper <coordinator|collector|finalizer|reserves|all> [options]

  coordinator  POST /heartbeat (default :8600); unassigns silent providers, assigns Open jobs (needs the coordinator key)
  collector    POST /signatures (default :8601); relays 2-of-3 verifier decisions to the escrow
  finalizer    on a cron schedule: settle (Settleable / ArbiterTimedOut) and claimEarnings
  reserves     every new block: held vs owed; logs PROOF OF RESERVES FAILED if held < owed
  all          the four in one process (--coordinator-port, --collector-port)

common:      --rpc URL  --deployment FILE  --key FILE  --pretty  --dry-run  --once
             --interval-ms N  --tx-timeout-ms N (default 60000)  --rpc-timeout-ms N  --from-block N
coordinator: --port N  --host H  --heartbeat-timeout-ms N (default 5000)  --start-grace-ms N (default 20000)  --max-clock-skew-ms N
             --min-memory MiB  --template-memory TEMPLATE_ID=MiB (repeatable)
collector:   --port N  --host H  --state-file FILE (default .gpuchain/collector-state.json)
             --via-safe-tx --owner-key FILE (repeatable: execute as a Safe transaction signed by those owners)
finalizer:   --cron "*/10 * * * * *"
reserves:    --strict (exit 1 on a failed proof)  --max-blocks-per-tick N`;

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(USAGE);
    return name ? 0 : 2;
  }
  if (!(KEEPERS as readonly string[]).includes(name)) throw new UsageError(`unknown keeper "${name}"\n\n${USAGE}`);
  const keeper = name as KeeperName;
  const { values } = parseCommand(rest, OPTIONS[keeper]);
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const v = values as FlagValues;
  const shared = { dryRun: v["dry-run"] === true };
  // Every configuration is built (and validated) before anything connects.
  const configs = {
    coordinator: keeper === "coordinator" || keeper === "all" ? coordinatorConfig(v, keeper === "all" ? "coordinator-port" : "port") : undefined,
    collector: keeper === "collector" || keeper === "all" ? collectorConfig(v, keeper === "all" ? "collector-port" : "port") : undefined,
    finalizer: keeper === "finalizer" || keeper === "all" ? finalizerConfig(v) : undefined,
    reserves: keeper === "reserves" || keeper === "all" ? reservesConfig(v) : undefined,
  };
  const keyFile = typeof v.key === "string" ? v.key : undefined;
  if (!keyFile && !shared.dryRun && keeper !== "reserves") {
    throw new UsageError(`--key FILE is required (the keeper's signer), unless --dry-run`);
  }
  const pretty = v.pretty === true;
  const common = configs.coordinator ?? configs.collector ?? configs.finalizer ?? configs.reserves!;
  const deployment = asUsage(() => loadDeployment(String(v.deployment)));
  const wallet = keyFile ? asUsage(() => loadKey(keyFile)) : undefined;
  const root = createLogger({ component: "keeper", pretty });
  // The node must answer, be on the deployment's chain and hold its contracts (one-line errors otherwise).
  const { provider, chainId } = await connectChecked(String(v.rpc), deployment, common.rpcTimeoutMs);
  const { signal, dispose } = shutdownSignal(root);
  try {
    const signer = wallet?.connect(provider);
    const sendQueue = new SendQueue(); // `all` shares one key: one nonce sequence for the four keepers
    const contextFor = (component: string) =>
      keeperContext({
        deployment,
        provider,
        chainId,
        signer,
        logger: createLogger({ component, pretty }),
        dryRun: common.dryRun,
        txTimeoutMs: common.txTimeoutMs,
        rpcTimeoutMs: common.rpcTimeoutMs,
        sendQueue,
      });
    // In `all`, a keeper that stops on its own (a failure, or --strict reserves) stops the others too.
    const stopAll = new AbortController();
    signal.addEventListener("abort", () => stopAll.abort(), { once: true });
    const runs: Promise<number>[] = [];
    const start = (name: string, run: () => Promise<number>) =>
      runs.push(
        run().then(
          (code) => {
            if (!stopAll.signal.aborted && !common.once) root.warn("keeper stopped; stopping the others", { keeper: name, code });
            if (!common.once) stopAll.abort();
            return code;
          },
          (err) => {
            root.error("keeper failed; stopping the others", { keeper: name, error: (err as Error)?.message ?? String(err) });
            stopAll.abort();
            return 1;
          },
        ),
      );
    if (configs.coordinator) {
      const ctx = await contextFor("coordinator");
      await warnIfNotCoordinator(ctx, ctx.logger);
      start("coordinator", () => runCoordinator(ctx, configs.coordinator!, stopAll.signal));
    }
    if (configs.collector) {
      const ctx = await contextFor("collector");
      const deps = await collectorDeps(ctx, configs.collector, deployment, String(v.rpc));
      start("collector", () => runCollector(ctx, configs.collector!, deps, stopAll.signal));
    }
    if (configs.finalizer) {
      const ctx = await contextFor("finalizer");
      start("finalizer", () => runFinalizer(ctx, configs.finalizer!, stopAll.signal));
    }
    if (configs.reserves) {
      const ctx = await contextFor("reserves");
      start("reserves", () => runReservesWatch(ctx, configs.reserves!, stopAll.signal));
    }
    const codes = await Promise.all(runs);
    return Math.max(0, ...codes);
  } finally {
    dispose();
    provider.destroy();
  }
}

/** Deployment and key file problems are the user's to fix: print them as usage errors, without a stack. */
function asUsage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof DeploymentError || err instanceof KeyFileError) throw new UsageError(err.message);
    throw err;
  }
}

async function collectorDeps(ctx: KeeperContext, config: CollectorConfig, deployment: ReturnType<typeof loadDeployment>, rpc: string) {
  const deps = { safeAddress: deployment.verifierSafe, escrowAddress: deployment.escrow };
  if (!config.viaSafeTx) return deps;
  // protocol-kit (and viem) take seconds to load: only when asked for.
  const { safeTxExecutor } = await import("./collector/safeTx.ts");
  const ownerKeys = config.ownerKeys.map((file) => loadKey(file).privateKey);
  return { ...deps, executor: safeTxExecutor(ctx, { provider: rpc, ownerKeys, deployment }) };
}

async function warnIfNotCoordinator(ctx: KeeperContext, logger: Logger): Promise<void> {
  const coordinator = await ctx.escrow.coordinator();
  if (ctx.address && ctx.address.toLowerCase() !== coordinator.toLowerCase()) {
    logger.warn("this key is not the escrow's coordinator: it will only unassign providers whose lease lapsed", {
      key: ctx.address,
      coordinator,
    });
  }
}
