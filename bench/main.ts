/**
 * `npm run bench`: every performance figure as plain `name: value` lines, measured in one run on this machine,
 * so runs can be compared line by line. Progress goes to stderr.
 */
import { benchWorkloads } from "./workloads.ts";
import { benchAgent } from "./agent.ts";
import { benchVerifier } from "./verifier.ts";
import { benchCheat } from "./cheat.ts";
import { benchStore } from "./store.ts";
import { benchGas } from "./gas.ts";
import { benchSystem } from "./system.ts";
import { benchKeepers } from "./keepers.ts";
import { benchDashboard } from "./dashboard.ts";
import { benchSybil } from "./sybil.ts";
import { benchVerifierDelay } from "./verifierDelay.ts";
import { benchRehearsal } from "./rehearsal.ts";
import { parseFlags, UsageError, wantsHelp } from "../sdk/args.ts";

const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);

const parts: [string, () => Promise<Record<string, number | string>>][] = [
  ["training throughput per template", benchWorkloads],
  ["agent time outside training", benchAgent],
  ["verifier compute and detection", benchVerifier],
  ["cheating against the deployed verifiers (issue 19)", benchCheat],
  ["one malicious verifier's worst delay (issue 19)", benchVerifierDelay],
  ["checkpoint store and segment commitments", benchStore],
  ["gas of a full job lifecycle", benchGas],
  ["keepers at 1,000 jobs and 1,000 providers", () => benchKeepers(progress)],
  ["dashboard: bundle, first render, playback", () => benchDashboard(progress)],
  ["no starving: 5 and 20 idle identities against one honest provider", () => benchSybil(progress)],
  ["public-network rehearsal: reorgs, RPC faults, a gas spike (issue 22)", () => benchRehearsal(progress)],
  // Last: it ends with the 10-minute soak, which loads the machine on purpose.
  ["whole network: overhead, failover and the false-failover soak", () => benchSystem(progress)],
];

const USAGE = "usage: npm run bench [-- --debug]   (prints `name: value` lines; progress on stderr)";
const argv = process.argv.slice(2);
if (wantsHelp(argv)) {
  console.log(USAGE);
  process.exit(0);
}
const debug = argv.includes("--debug");
try {
  parseFlags(argv, { debug: { type: "boolean", default: false }, help: { type: "boolean", short: "h" } });
  const stray = argv.find((a) => !a.startsWith("-"));
  if (stray !== undefined)
    throw new UsageError(`unexpected argument "${stray}": npm run bench takes no arguments`, true);
} catch (err) {
  // One line, like every command: usage errors exit 2; the stack only with --debug.
  const usage = err instanceof UsageError;
  console.error(`npm run bench: ${firstLine(err)}${usage && err.showUsage ? `\n\n${USAGE}` : ""}`);
  if (debug) console.error((err as Error)?.stack);
  process.exit(usage ? 2 : 1);
}

// Every part runs, also after one fails: a broken part must not hide the others' figures.
const failed: string[] = [];
const benchStarted = performance.now();
for (const [name, run] of parts) {
  progress(`${name} …`);
  const started = performance.now();
  try {
    for (const [key, value] of Object.entries(await run())) console.log(`${key}: ${value}`);
    progress(`${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (err) {
    failed.push(name);
    console.error(`npm run bench: ${name} failed: ${firstLine(err)}`);
    if (debug) console.error((err as Error)?.stack);
  }
}
console.log(`bench_total_seconds: ${Math.round((performance.now() - benchStarted) / 100) / 10}`);
console.log(`bench_failed_parts: ${failed.length}`);
if (failed.length) {
  console.error(`npm run bench: ${failed.length} of ${parts.length} parts failed: ${failed.join("; ")}`);
  process.exit(1);
}
process.exit(0);

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split("\n")[0];
}
