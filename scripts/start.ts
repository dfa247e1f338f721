/**
 * `npm start`: the whole GPUChain network on one machine, with no network needed. See USAGE below.
 * Exits 0 only if every promise held; 2 on a usage error, 1 on a failure (one line; the stack with --debug).
 * Ctrl-C stops every process it started.
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { parseDuration, parseFlags, parsePositiveInt, UsageError, wantsHelp } from "../sdk/run/args.ts";
import { checkRpcUrl } from "../sdk/node/contracts.ts";
import { parseFault, FaultSpecError } from "../agent/faults.ts";
import { replay } from "../demo/recording.ts";
import { runScenario } from "../demo/scenario.ts";
import type { ChainNode, ScenarioOptions } from "../demo/types.ts";
import { listTemplates } from "../workloads/index.ts";
import { announceNetwork } from "../cli/liveNetwork.ts";

export const USAGE = `usage: npm start [-- options]

  (no options)           the real MNIST job on an embedded chain: failover, refusal, settlement
  --dispute              … and the client disputes; the arbiter stays silent 3 days; the verdict stands
  --quick                the small synthetic template (seconds instead of minutes)
  --template NAME        another approved template: mnist-mlp (default), mnist-cnn, char-transformer, blobs-tiny (= --quick)
  --keep                 leave the network up after the settlement (try explain, wallet, the CLI) until Ctrl-C
  --port N               the embedded chain's port (default 8545, or a free one if 8545 is taken)
  --node hardhat|anvil   which embedded node to run (default hardhat)
  --network rehearsal    the scenario on a chain that behaves like a public one: anvil with 2-s blocks, every
                         part behind a fault proxy (50–300 ms, 5 % 429, 1 % dropped, 1 % truncated), three
                         reorganisations (after a report, an acceptance, the verdict), a gas spike with the
                         client's createJob stuck below it; 1 confirmation; prints what it injected and what
                         each part did (README "Public networks")
  --steps N  --interval N  --fault KIND  --timeout DURATION (default 900 s)  --run-dir DIR
  --replay FILE          play a recording back (e.g. recordings/sample.jsonl)
  --hosts                every part on a separate network host (network namespaces; Linux, as root)
  --store URL            checkpoints in that store (s3://BUCKET/PREFIX with the AWS variables, or file://DIR)
                         instead of the embedded S3 server
  --rpc URL --deployment FILE --keys DIR
                         the same scenario on an existing deployment (any RPC, e.g. Base Sepolia; DIR holds
                         owner/coordinator/verifier1-3/client .key files, each 0600; see README "Deploying")
  --debug                stack traces on failure`;

const OPTIONS = {
  dispute: { type: "boolean", default: false },
  quick: { type: "boolean", default: false },
  template: { type: "string" },
  keep: { type: "boolean", default: false },
  port: { type: "string" },
  node: { type: "string", default: "hardhat" },
  network: { type: "string" },
  replay: { type: "string" },
  steps: { type: "string" },
  interval: { type: "string" },
  fault: { type: "string", default: "garbage-weights" },
  "run-dir": { type: "string" },
  timeout: { type: "string", default: "900" },
  rpc: { type: "string" },
  deployment: { type: "string" },
  keys: { type: "string" },
  store: { type: "string" },
  hosts: { type: "boolean", default: false },
  debug: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

type Values = ReturnType<typeof parseFlags<typeof OPTIONS>>["values"];

/** Every flag checked before anything starts. */
export function buildOptions(v: Values, signal: AbortSignal): ScenarioOptions | { replay: string } {
  if (v.replay !== undefined) {
    if (!existsSync(v.replay)) throw new UsageError(`--replay ${v.replay}: no such recording`);
    return { replay: v.replay };
  }
  const template = templateOf(v);
  const [defaultSteps, defaultInterval] = JOB_SIZE[template] ?? [600, 100];
  const totalSteps = parsePositiveInt(v.steps, "steps", defaultSteps);
  const checkpointInterval = parsePositiveInt(v.interval, "interval", defaultInterval);
  if (checkpointInterval > totalSteps)
    throw new UsageError(`--interval (${checkpointInterval}) cannot exceed --steps (${totalSteps})`);
  if (!["hardhat", "anvil"].includes(v.node)) throw new UsageError(`--node must be hardhat or anvil, got "${v.node}"`);
  const rehearsal = rehearsalOf(v);
  const port = v.port === undefined ? undefined : parsePositiveInt(v.port, "port");
  if (port !== undefined && port > 65_535)
    throw new UsageError(`--port must be a TCP port (1 to 65535), got "${v.port}"`);
  try {
    parseFault(v.fault || undefined);
  } catch (err) {
    if (err instanceof FaultSpecError) throw new UsageError(`--fault: ${err.message}`);
    throw err;
  }
  return {
    template,
    totalSteps,
    checkpointInterval,
    dispute: v.dispute,
    fault: v.fault,
    kill: true,
    // Each run gets its own folder and deployment id, so two runs on one machine never share state.
    runDir: v["run-dir"] ?? path.join(".gpuchain", "runs", new Date().toISOString().replace(/[:.]/g, "-")),
    deploymentId: `gpuchain-start-${process.pid}`,
    timeoutMs: parseDuration(v.timeout, "timeout", 900) * 1000,
    print: (l) => console.log(l),
    signal,
    node: v.node as ChainNode,
    port,
    keep: v.keep,
    liveStatus: process.stdout.isTTY === true,
    external: externalTarget(v),
    rehearsal,
    store: v.store,
    hosts: v.hosts,
  };
}

/** Steps and checkpoint interval of each template's demonstration job (what its job needs to show learning). */
const JOB_SIZE: Readonly<Record<string, [number, number]>> = {
  "mnist-mlp": [600, 100],
  "mnist-cnn": [1200, 100],
  "char-transformer": [600, 100],
  "blobs-tiny": [120, 20],
};

function templateOf(v: Values): string {
  if (v.template === undefined) return v.quick ? "blobs-tiny" : "mnist-mlp";
  if (v.quick && v.template !== "blobs-tiny")
    throw new UsageError(`--quick is the blobs-tiny template; drop it or --template`);
  const names = listTemplates().map((t) => t.descriptor.name);
  if (!names.includes(v.template))
    throw new UsageError(`--template ${v.template}: not an approved template (${names.join(", ")})`);
  return v.template;
}

/** `--network rehearsal` (the only named network; the default is the embedded chain). */
function rehearsalOf(v: Values): boolean {
  if (v.network === undefined) return false;
  if (v.network !== "rehearsal") throw new UsageError(`--network must be rehearsal, got "${v.network}"`);
  const clash = [
    ["--rpc", v.rpc],
    ["--deployment", v.deployment],
    ["--keys", v.keys],
    ["--hosts", v.hosts || undefined],
    ["--dispute", v.dispute || undefined],
    ["--node", v.node === "hardhat" ? undefined : v.node],
  ].find(([, x]) => x !== undefined);
  if (clash?.[0] === "--dispute") throw new UsageError("--network rehearsal has no dispute: drop --dispute");
  if (clash) throw new UsageError(`--network rehearsal runs its own anvil: drop ${clash[0]}`);
  return true;
}

function externalTarget(v: Values) {
  const given = [v.rpc, v.deployment, v.keys].filter((x) => x !== undefined).length;
  if (given === 0) return undefined;
  if (given !== 3)
    throw new UsageError("an external run needs all three of --rpc URL, --deployment FILE and --keys DIR", true);
  checkRpcUrl(v.rpc!);
  if (!existsSync(v.deployment!)) throw new UsageError(`--deployment ${v.deployment}: no such file`);
  if (!existsSync(v.keys!) || !statSync(v.keys!).isDirectory())
    throw new UsageError(`--keys ${v.keys}: no such folder`);
  if (v.dispute) throw new UsageError("--dispute waits out the arbiter's 3 days: only on the embedded chain");
  return { rpc: v.rpc!, deploymentFile: v.deployment!, keysDir: v.keys! };
}

async function main(argv: string[]): Promise<number> {
  if (wantsHelp(argv)) {
    console.log(USAGE);
    return 0;
  }
  const { values, positionals } = parseFlags(argv, OPTIONS);
  if (positionals.length)
    throw new UsageError(`unexpected argument "${positionals[0]}": npm start takes only options`, true);
  const controller = new AbortController();
  const options = buildOptions(values, controller.signal);
  if ("replay" in options) return replay(options.replay, (l) => console.log(l));
  const stop = () => {
    if (!options.keep) console.log("\nstopping every process this run started …");
    controller.abort();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  // While the network is up, `gpuchain` run from this folder finds it with no --rpc/--deployment (cli/liveNetwork.ts).
  let unannounce = () => {};
  try {
    const result = await runScenario({
      ...options,
      onNetworkUp: async (up) => {
        await options.onNetworkUp?.(up);
        unannounce = announceNetwork(up);
      },
    });
    return result.ok ? 0 : 1;
  } finally {
    unannounce();
  }
}

const argv = process.argv.slice(2);
let interrupted = false;
process.once("SIGINT", () => (interrupted = true));

main(argv).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) {
      console.error(`npm start: ${err.message.split("\n")[0]}${err.showUsage ? `\n\n${USAGE}` : ""}`);
      process.exit(2);
    }
    if (interrupted) {
      console.error("stopped by Ctrl-C; every process this run started has exited");
      process.exit(130);
    }
    console.error(`npm start failed: ${String((err as Error)?.message ?? err).split("\n")[0]}`);
    if (argv.includes("--debug")) console.error((err as Error)?.stack);
    process.exit(1);
  },
);
