/**
 * `gpuchain keeper NAME|all [options]`: the keepers of keepers/registry.ts as long-running processes.
 * Exports `main(argv)` for the `gpuchain` dispatcher (cli/gpuchain.ts).
 */
import { UsageError, parseCommand } from "../sdk/run/args.ts";
import { connectChecked } from "../sdk/node/contracts.ts";
import { DeploymentError, loadDeployment } from "../sdk/node/deployment.ts";
import { KeyFileError, loadKey } from "../sdk/run/keys.ts";
import { createLogger, type Logger } from "../sdk/run/log.ts";
import { shutdownSignal } from "../sdk/run/runner.ts";
import { SendQueue } from "./chain.ts";
import { SHARED_OPTIONS, type FlagValues, type SharedConfig } from "./config.ts";
import { keeperContext } from "./context.ts";
import type { KeeperDefinition, KeeperOptions } from "./keeper.ts";
import { KEEPERS } from "./registry.ts";

const NAMES = KEEPERS.map((k) => k.name);

/** Under `all`, each server's `--port` becomes `--NAME-port`. */
const portFlagOf = (k: KeeperDefinition, all: boolean) => (all && "port" in k.options ? `${k.name}-port` : "port");

function optionsOf(keepers: readonly KeeperDefinition[], all: boolean): KeeperOptions {
  const options: KeeperOptions = { ...SHARED_OPTIONS };
  for (const k of keepers) {
    const { port, ...rest } = k.options;
    Object.assign(options, rest);
    if (port) options[portFlagOf(k, all)] = port;
  }
  return options;
}

const pad = (s: string, n: number) => s.padEnd(n);

export const USAGE = [
  `usage: gpuchain keeper <${[...NAMES, "all"].join("|")}> [options]`,
  "",
  ...KEEPERS.map((k) => `  ${pad(k.name, 11)}  ${k.summary}`),
  `  ${pad("all", 11)}  every keeper above in one process (${KEEPERS.filter((k) => "port" in k.options)
    .map((k) => `--${k.name}-port`)
    .join(", ")})`,
  "",
  "common:      --rpc URL  --deployment FILE  --key FILE  --pretty  --dry-run  --once",
  "             --interval-ms N  --tx-timeout-ms N (default 60000)  --rpc-timeout-ms N",
  "             --from-block N (where event scans start; default: the deployment's first block, else 0)",
  "             --rpc URL,URL (failover)  --rpc-rps N (per RPC URL; 0 = no limit)  --poll-ms N (default 500)",
  "             --max-fee-gwei G (fee cap per gas; default none locally, 5 on Base, 200 elsewhere)",
  ...KEEPERS.flatMap((k) => k.help.map((line, i) => `${pad(i === 0 ? `${k.name}:` : "", 12)} ${line}`)),
].join("\n");

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(USAGE);
    return name ? 0 : 2;
  }
  const all = name === "all";
  const chosen = all ? KEEPERS : KEEPERS.filter((k) => k.name === name);
  if (chosen.length === 0) throw new UsageError(`unknown keeper "${name}"\n\n${USAGE}`);
  const { values } = parseCommand(rest, optionsOf(chosen, all));
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const v = values as FlagValues;
  // Every configuration is built (and validated) before anything connects.
  const configs = chosen.map((k) => ({ keeper: k, config: k.config(v, portFlagOf(k, all)) }));
  const keyFile = typeof v.key === "string" ? v.key : undefined;
  if (!keyFile && v["dry-run"] !== true && chosen.some((k) => k.sends)) {
    throw new UsageError(`--key FILE is required (the keeper's signer), unless --dry-run`);
  }
  return runKeepers(configs, v, keyFile);
}

async function runKeepers(
  configs: { keeper: KeeperDefinition; config: SharedConfig }[],
  v: FlagValues,
  keyFile: string | undefined,
): Promise<number> {
  const pretty = v.pretty === true;
  const common = configs[0].config;
  const rpc = String(v.rpc);
  const deployment = asUsage(() => loadDeployment(String(v.deployment)));
  const wallet = keyFile ? asUsage(() => loadKey(keyFile)) : undefined;
  const root = createLogger({ component: "keeper", pretty });
  // The node must answer, be on the deployment's chain and hold its contracts (one-line errors otherwise).
  const { provider, chainId } = await connectChecked(rpc, deployment, common.rpcTimeoutMs);
  const { signal, dispose } = shutdownSignal(root);
  try {
    const signer = wallet?.connect(provider);
    const sendQueue = new SendQueue(); // `all` shares one key: one nonce sequence for every keeper
    // In `all`, a keeper that stops on its own (a failure, or --strict reserves) stops the others too.
    const stopAll = new AbortController();
    signal.addEventListener("abort", () => stopAll.abort(), { once: true });
    const runs: Promise<number>[] = [];
    for (const { keeper, config } of configs) {
      const ctx = await keeperContext({
        deployment,
        provider,
        chainId,
        signer,
        logger: createLogger({ component: keeper.name, pretty }),
        dryRun: common.dryRun,
        txTimeoutMs: common.txTimeoutMs,
        rpcTimeoutMs: common.rpcTimeoutMs,
        sendQueue,
      });
      const run = await keeper.prepare(ctx, config, { deployment, rpc });
      runs.push(watched(keeper.name, run(stopAll.signal), stopAll, common.once, root));
    }
    const codes = await Promise.all(runs);
    return Math.max(0, ...codes);
  } finally {
    dispose();
    provider.destroy();
  }
}

/** A keeper's run that, when it ends on its own (not --once), stops the others. */
function watched(name: string, run: Promise<number>, stopAll: AbortController, once: boolean, root: Logger) {
  return run.then(
    (code) => {
      if (!stopAll.signal.aborted && !once) root.warn("keeper stopped; stopping the others", { keeper: name, code });
      if (!once) stopAll.abort();
      return code;
    },
    (err) => {
      root.error("keeper failed; stopping the others", { keeper: name, error: (err as Error)?.message ?? String(err) });
      stopAll.abort();
      return 1;
    },
  );
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
