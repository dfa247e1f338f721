#!/usr/bin/env node
/**
 * `gpuchain`: one CLI for every role. Each subcommand lives with its part (agent/, verifier/, keepers/, cli/) and
 * exports `main(argv): Promise<number>` and its usage; this file dispatches and is the one error path: `--help`
 * anywhere prints the command's usage; a usage error is one line (+ the usage when a flag is unknown or missing)
 * and exit 2; any other failure is one line and exit 1; a stack trace only with `--debug`.
 */
import { wantsHelp } from "../sdk/run/args.ts";
import { reportError } from "./errors.ts";
import { JSON_COMMANDS, startJsonMode } from "./json.ts";

type Main = (argv: string[]) => Promise<number>;
interface CommandModule {
  main: Main;
  USAGE?: string;
  HELP?: string;
}

const COMMANDS: Record<string, { load: () => Promise<CommandModule>; help: string }> = {
  provide: {
    load: () => import("../agent/cli.ts"),
    help: "run a provider agent: --name N --price P [--memory-cap MiB]",
  },
  verify: { load: () => import("../verifier/cli.ts"), help: "run one Quality Guard verifier (--key FILE)" },
  keeper: {
    load: () => import("../keepers/cli.ts"),
    help: "run keepers: coordinator | collector | finalizer | reserves | all",
  },
  job: { load: () => import("./client.ts"), help: "client: job create | job cancel JOB | job approve-template NAME" },
  dispute: { load: () => import("./dispute.ts"), help: "client: dispute JOB (posts the bond)" },
  arbiter: { load: () => import("./arbiter.ts"), help: "arbiter: arbiter resolve JOB --uphold|--reject" },
  wallet: { load: () => import("./wallet.ts"), help: "what ADDRESS is owed, per job, and why" },
  reserves: { load: () => import("./reserves.ts"), help: "proof of reserves: held vs owed (--watch: every block)" },
  explain: { load: () => import("./explain.ts"), help: "a job's history rebuilt from contract events" },
  faucet: { load: () => import("./faucet.ts"), help: "local chain: test ETH (and --usdc) for ADDRESS" },
  settle: { load: () => import("./settle.ts"), help: "anyone: settle JOB once its dispute window has ended" },
  withdraw: { load: () => import("./withdraw.ts"), help: "claim earnings and withdraw what the key is owed" },
  dashboard: { load: () => import("./dashboard.ts"), help: "serve the web dashboard for a deployment (read-only)" },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(9)} ${c.help}`);
  return [
    "usage: gpuchain <command> [options]   (gpuchain <command> --help for its options)",
    "",
    ...lines,
    "",
    "common options: --rpc URL[,URL…] (several: failover)  --deployment FILE (Ignition deployed_addresses.json)",
    "                --key FILE  --store URL  --rpc-timeout-ms N (a call, retries included)  --tx-timeout-ms N",
    "                --rpc-rps N (requests/s per RPC URL; default none on loopback, 25 elsewhere; 0 = none)",
    "                --poll-ms N (receipt/event polling, default 500)  --pretty  --dry-run  --debug (stack traces)",
    "                --max-fee-gwei G (most paid per gas, tip included; default none locally, 5 on Base, 200 elsewhere;",
    "                  GPUCHAIN_MAX_FEE_GWEI; a transaction not mined in 3 blocks is re-sent at its nonce, +12.5 %)",
    "                (--store: s3://BUCKET/PREFIX with the AWS_* variables, file://DIR or a folder)",
  ].join("\n");
}

async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? console.log : console.error)(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`gpuchain: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  const module = await command.load();
  const commandUsage = module.USAGE ?? module.HELP ?? `usage: gpuchain ${name} …`;
  if (wantsHelp(rest)) {
    console.log(commandUsage);
    return 0;
  }
  // --json: one document on standard output, everything else on standard error (cli/json.ts).
  if (JSON_COMMANDS.has(name) && rest.slice(0, endOfFlags(rest)).includes("--json")) startJsonMode();
  try {
    return await module.main(rest);
  } catch (err) {
    return reportError(err, commandUsage, argv.includes("--debug"));
  }
}

/** Where the flags end: a `--` ends them (what follows is an argument). */
function endOfFlags(argv: string[]): number {
  const i = argv.indexOf("--");
  return i < 0 ? argv.length : i;
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.exitCode = reportError(err, usage(), process.argv.includes("--debug"));
  },
);
