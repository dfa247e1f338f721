/**
 * `gpuchain provide --name NAME --price P [--rpc URL] [--deployment FILE] [--memory-cap MiB] [--key FILE]
 *  [--store URL] [--coordinator URL] [--device EP] [--fault KIND[:ARG]] [--faucet] [--once] [--json] [--dry-run]`
 *
 * Builds the agent's config once (validated, with clear errors), wires the real I/O (key file, RPC, checkpoint
 * store, coordinator HTTP, terminal, signals) and runs agent/agent.ts `runAgent`.
 */
import { isProviderName, PROVIDER_NAME_RULE } from "../sdk/words/providerName.ts";
import path from "node:path";
import { JsonRpcProvider, Network, Wallet } from "ethers";
import { JsonRpcClient } from "../sdk/node/jsonRpc.ts";
import { rpcSettings } from "../sdk/node/rpc.ts";
import { managedWallet } from "../sdk/node/txManager.ts";
import {
  expectPositionals,
  parseCommand,
  parsePositiveInt,
  parseUsdc,
  requireString,
  UsageError,
} from "../sdk/run/args.ts";
import { checkDeploymentOn, connectProtocol, protocolInterfaces, rpcChainId, RpcError } from "../sdk/node/contracts.ts";
import { loadDeployment, type Deployment } from "../sdk/node/deployment.ts";
import { classifyError, describeError } from "../sdk/node/errors.ts";
import { HEARTBEAT_DEFAULTS } from "../sdk/rules/heartbeat.ts";
import { KeyFileError, loadOrCreateKey } from "../sdk/run/keys.ts";
import { createLogger, type Logger } from "../sdk/run/log.ts";
import { withRetry } from "../sdk/run/retry.ts";
import { openStore } from "../workloads/index.ts";
import { storeUrlArg } from "../sdk/run/storeArg.ts";
import { withdrawCommand } from "../sdk/words/commandLine.ts";
import { runAgent } from "./agent.ts";
import { detectDevice } from "./device.ts";
import { DEVICE_CHOICES, isDeviceChoice, type DeviceChoice } from "./executionProvider.ts";
import { shutdownSignal } from "../sdk/run/runner.ts";
import { FaultSpecError, parseFault } from "./faults.ts";
import { httpHeartbeatSender } from "./liveness.ts";
import { Terminal } from "./progress.ts";
import { DEFAULT_TIMING, type AgentConfig } from "./types.ts";

/** This installation's folder (where package.json names the gpuchain bin): `npx --prefix` finds it from anywhere. */
export const INSTALL_DIR = path.resolve(import.meta.dirname, "..");

export const PROVIDE_OPTIONS = {
  name: { type: "string" },
  price: { type: "string" },
  "memory-cap": { type: "string" },
  device: { type: "string" },
  coordinator: { type: "string", default: "http://127.0.0.1:8600/heartbeat" },
  fault: { type: "string" },
  once: { type: "boolean", default: false },
  "step-log": { type: "boolean", default: false },
  "heartbeat-ms": { type: "string" },
  faucet: { type: "boolean", default: false },
  json: { type: "boolean", default: false },
} as const;

export const USAGE = `usage: gpuchain provide --name NAME --price USDC_PER_STEP [options]

  --rpc URL            JSON-RPC endpoint (default http://127.0.0.1:8545)
  --deployment FILE    Ignition deployed_addresses.json (default: the local chain's)
  --key FILE           provider key (default .gpuchain/providers/NAME/key, created 0600)
  --store URL          checkpoint store: s3://BUCKET/PREFIX, file://DIR or a folder (default .gpuchain/store)
  --memory-cap MiB     offer less memory than the device has (capped profile; smaller micro-batches)
  --device EP          execution provider: auto (default: webgpu on a GPU with its Vulkan driver, else cuda where
                       its binaries are installed, else cpu), cpu, webgpu or cuda; GPUCHAIN_EP=EP does the same
  --coordinator URL    heartbeat endpoint (default http://127.0.0.1:8600/heartbeat)
  --fault KIND[:ARG]   inject a fault: garbage-weights skip-steps wrong-data nan hash-mismatch replay-old
                       write-after-fence die-at:N
  --once               work the jobs assigned now, then exit
  --heartbeat-ms MS    off-chain heartbeat period (default ${HEARTBEAT_DEFAULTS.intervalMs}; keep it well under the
                       coordinator's --heartbeat-timeout-ms)
  --step-log           log every trained step (debug lines): an exact record of the work, even after a SIGKILL
  --faucet             on a development chain (anvil, a Hardhat node): a key without gas takes 1 test ETH from the
                       node instead of waiting to be funded (refused, with what to do, on any other node)
  --max-fee-gwei G     most paid per gas, tip included (default none locally, 5 on Base, 200 elsewhere)
  --json               one JSON line per log record (for jq or a log shipper) instead of short human lines
  --dry-run            show the key, device and registration decision without sending anything`;

export interface ProvideArgs {
  config: AgentConfig;
  rpc: string;
  deployment: string;
  keyFile: string;
  store: string;
  coordinator: string;
  pretty: boolean;
  help: boolean;
}

/** Parses and validates the flags (detects the device too, since --memory-cap shapes the profile). */
export function parseProvideArgs(
  argv: string[],
  detect = detectDevice,
  env: NodeJS.ProcessEnv = process.env,
): ProvideArgs {
  const { values, positionals } = parseCommand(argv, PROVIDE_OPTIONS);
  if (values.help) return { help: true } as ProvideArgs;
  // `--name my gpu` would otherwise register "my" and drop "gpu" without a word
  expectPositionals(positionals, []);
  const name = requireString(values.name, "name");
  if (!isProviderName(name)) throw new UsageError(`--name must be ${PROVIDER_NAME_RULE}, got "${name}"`);
  const pricePerStep = parseUsdc(requireString(values.price, "price"), "price");
  const cap = values["memory-cap"] === undefined ? undefined : parsePositiveInt(values["memory-cap"], "memory-cap");
  const { device, askedBy } = parseDeviceChoice(values.device, env.GPUCHAIN_EP);
  let fault;
  try {
    fault = parseFault(values.fault);
  } catch (err) {
    if (err instanceof FaultSpecError) throw new UsageError(err.message);
    throw err;
  }
  const safeName = name.replace(/[^A-Za-z0-9._-]/g, "_");
  return {
    config: {
      name,
      pricePerStep,
      device: detect({ memoryCapMiB: cap, device, askedBy }),
      fault,
      once: values.once,
      dryRun: values["dry-run"],
      faucet: values.faucet,
      stepLog: values["step-log"],
      heartbeatMs: parsePositiveInt(values["heartbeat-ms"], "heartbeat-ms", HEARTBEAT_DEFAULTS.intervalMs),
      ...DEFAULT_TIMING,
    },
    rpc: values.rpc,
    deployment: values.deployment,
    keyFile: values.key ?? path.join(".gpuchain", "providers", safeName, "key"),
    store: storeUrlArg(values.store),
    coordinator: values.coordinator,
    // Human lines by default (a person runs the copied command); --json for machines (npm start reads them).
    pretty: !values.json,
    help: false,
  };
}

/** `--device` wins over GPUCHAIN_EP; neither: auto. A bad value of either is a usage error. */
export function parseDeviceChoice(
  flag: string | undefined,
  envValue: string | undefined,
): { device: DeviceChoice; askedBy: string } {
  const [value, askedBy] =
    flag !== undefined ? [flag, `--device ${flag}`] : envValue ? [envValue, `GPUCHAIN_EP=${envValue}`] : ["auto", ""];
  if (!isDeviceChoice(value))
    throw new UsageError(
      `${flag !== undefined ? "--device" : "GPUCHAIN_EP"} must be one of ${DEVICE_CHOICES.join(", ")}, got "${value}"`,
    );
  return { device: value, askedBy };
}

/**
 * Asks the RPC for its chain id and, given a deployment, checks the deployment belongs to that chain
 * (sdk/node/contracts.ts checkDeploymentOn), retrying an outage (with "chain unreachable" logs) until it answers or we are
 * stopped. A stale deployment (a restarted chain: no code at its addresses) is the person's to fix, thrown at once:
 * every call through it would fail later with "could not decode result data".
 */
export async function connectRpc(
  url: string,
  logger: Logger,
  signal: AbortSignal,
  deployment?: Deployment,
): Promise<JsonRpcProvider> {
  const iface = protocolInterfaces().escrow;
  const untilAnswered = {
    retries: Infinity,
    baseMs: 500,
    maxMs: 15_000,
    signal,
    isRetryable: (err: unknown) => err instanceof RpcError || classifyError(err, iface) === "retryable",
    onRetry: (err: unknown, attempt: number, delayMs: number) =>
      logger.warn("chain unreachable", { rpc: url, attempt, retryInMs: delayMs, error: describeError(err, iface) }),
  };
  const chainId = await withRetry(() => rpcChainId(url, 5_000), untilAnswered);
  // A static network: an RPC outage later fails calls (and they are retried) instead of hanging the provider.
  const network = Network.from(chainId);
  const provider = new JsonRpcClient(url, network, {
    staticNetwork: network,
    pollingInterval: rpcSettings({ pollingMs: 500 }).pollingMs,
    cacheTimeout: -1,
  });
  if (deployment) {
    await withRetry(() => checkDeploymentOn(provider, deployment, url, chainId), untilAnswered).catch((err) => {
      provider.destroy();
      throw err;
    });
  }
  return provider;
}

/** The provider key: created (0600) on first start, reused after; a key readable by others is refused. */
export function openProviderKey(file: string, logger: Logger): Wallet | undefined {
  try {
    const key = loadOrCreateKey(file, true);
    logger.info(key.created ? "created provider key" : "using provider key", {
      address: key.wallet.address,
      keyFile: file,
    });
    return key.wallet;
  } catch (err) {
    if (!(err instanceof KeyFileError)) throw err;
    logger.error(`refusing key file: ${err.message}`, { keyFile: file });
    return undefined;
  }
}

export async function main(argv: string[]): Promise<number> {
  const args = parseProvideArgs(argv);
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const terminal = new Terminal(process.stdout);
  const logger = createLogger({ component: "agent", pretty: args.pretty, write: (line) => terminal.log(line) });
  // Key and deployment problems are the person's to fix: thrown to gpuchain's one error path (one line, exit 1).
  const key = loadOrCreateKey(args.keyFile, true);
  const wallet = key.wallet;
  const keyFields = { address: wallet.address, keyFile: args.keyFile };
  logger.info(key.created ? "created provider key" : "using provider key", keyFields);
  const deployment = loadDeployment(args.deployment);
  const { signal, dispose } = shutdownSignal(logger, "stopping (finishing or abandoning the current step)");
  const provider = await connectRpc(args.rpc, logger, signal, deployment).catch((err) => {
    if (signal.aborted) return undefined;
    dispose();
    throw err;
  });
  if (!provider) {
    dispose();
    return 0;
  }
  const signer = managedWallet(wallet, provider, { logger: logger.child({ part: "tx" }) }); // one nonce manager per key
  // Absolute paths: the command it prints works from any folder.
  const withdraw = withdrawCommand({
    install: INSTALL_DIR,
    key: path.resolve(args.keyFile),
    rpc: args.rpc,
    deployment: path.resolve(args.deployment),
  });
  try {
    const result = await runAgent(
      { ...args.config, withdrawCommand: withdraw },
      {
        signer,
        protocol: connectProtocol(deployment, signer),
        store: openStore(args.store, { onEvent: (e) => logger.warn(`store ${e.kind}`, { ...e, store: args.store }) }),
        logger,
        clock: { now: () => Date.now() },
        heartbeatSender: httpHeartbeatSender(args.coordinator),
        signal,
        terminal,
      },
    );
    return result.exitCode;
  } catch (err) {
    // Not an outage (those are retried) nor a revert the agent handles: e.g. a deployment file for another chain.
    logger.error("provider agent failed", { error: describeError(err, protocolInterfaces().escrow) });
    return 1;
  } finally {
    dispose();
    provider.destroy();
  }
}
