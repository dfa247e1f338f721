#!/usr/bin/env node
/**
 * `gpuchain`: one CLI for every role. Each subcommand lives with its part (agent/, verifier/, keepers/, …) and
 * exports `main(argv): Promise<number>`; this file only dispatches and turns errors into clear messages.
 */
import { UsageError } from "../sdk/args.ts";

type Main = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, { load: () => Promise<{ main: Main }>; help: string }> = {
  provide: { load: () => import("../agent/cli.ts"), help: "run a provider agent: --name N --price P [--memory-cap MiB]" },
  verify: { load: () => import("../verifier/cli.ts"), help: "run one Quality Guard verifier (--key FILE)" },
  keeper: { load: () => import("../keepers/cli.ts"), help: "run keepers: coordinator | collector | finalizer | reserves | all" },
  job: { load: () => import("./client.ts"), help: "client: job create | job cancel JOB" },
  dispute: { load: () => import("./dispute.ts"), help: "client: dispute JOB (posts the bond)" },
  arbiter: { load: () => import("./arbiter.ts"), help: "arbiter: arbiter resolve JOB --uphold|--reject" },
  wallet: { load: () => import("./wallet.ts"), help: "what ADDRESS is owed, per job, and why" },
  reserves: { load: () => import("./reserves.ts"), help: "proof of reserves: held vs owed, live" },
  explain: { load: () => import("./explain.ts"), help: "a job's history rebuilt from contract events" },
  withdraw: { load: () => import("./withdraw.ts"), help: "claim earnings and withdraw what the key is owed" },
  dashboard: { load: () => import("./dashboard.ts"), help: "serve the web dashboard for a deployment (read-only)" },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(9)} ${c.help}`);
  return [
    "usage: gpuchain <command> [options]",
    "",
    ...lines,
    "",
    "common options: --rpc URL  --deployment FILE (Ignition deployed_addresses.json)  --key FILE  --store DIR  --pretty  --dry-run",
  ].join("\n");
}

async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`gpuchain: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  const { main } = await command.load();
  return main(rest);
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    if (err instanceof UsageError) {
      console.error(`gpuchain: ${err.message}`);
      process.exitCode = 2;
    } else {
      console.error(`gpuchain: ${(err as Error)?.stack ?? err}`);
      process.exitCode = 1;
    }
  },
);
