/**
 * `npm run bench`: every performance figure as plain `name: value` lines, measured in one run on this machine,
 * so runs can be compared line by line. Progress goes to stderr.
 */
import { benchWorkloads } from "./workloads.ts";
import { benchAgent } from "./agent.ts";
import { benchVerifier } from "./verifier.ts";
import { benchCheat } from "./cheat.ts";
import { benchStore } from "./store.ts";
import { benchStoreHold } from "./storeHold.ts";
import { benchGas } from "./gas.ts";
import { benchProbation } from "./probation.ts";
import { benchSystem } from "./system.ts";
import { benchKeepers } from "./keepers.ts";
import { benchDashboard } from "./dashboard.ts";
import { benchSybil } from "./sybil.ts";
import { benchVerifierDelay } from "./verifierDelay.ts";
import { benchRehearsal } from "./rehearsal.ts";
import { benchLanes } from "./lanes.ts";
import { parseFlags, UsageError, wantsHelp } from "../sdk/run/args.ts";
import { listTemplates } from "../workloads/index.ts";

const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** Each part: the key `--part` selects it by, what it measures, and the run. */
const parts: [string, string, () => Promise<Record<string, number | string>>][] = [
  ["workloads", "training throughput per template", () => benchWorkloads(templates)],
  ["agent", "agent time outside training", benchAgent],
  ["verifier", "verifier compute and detection", benchVerifier],
  ["cheat", "cheating against the deployed verifiers", benchCheat],
  ["verifier-delay", "one malicious verifier's worst delay", benchVerifierDelay],
  ["store", "checkpoint store and segment commitments", benchStore],
  ["store-hold", "longest hold by a reporter's own unreadable blob (file://, S3 without the gate)", benchStoreHold],
  ["gas", "gas of a full job lifecycle", benchGas],
  ["probation", "what an honest crash costs a newcomer and a proven provider", benchProbation],
  ["keepers", "keepers at 1,000 jobs and 1,000 providers", () => benchKeepers(progress)],
  ["dashboard", "dashboard: bundle, first render, playback", () => benchDashboard(progress)],
  ["sybil", "no starving: 5 and 20 idle identities against one honest provider", () => benchSybil(progress)],
  ["lanes", "rounds and lanes: K = 1, 2, 4 at equal total inner steps", () => benchLanes(progress)],
  ["rehearsal", "public-network rehearsal: reorgs, RPC faults, a gas spike", () => benchRehearsal(progress)],
  // Last: it ends with the 10-minute soak, which loads the machine on purpose.
  ["system", "whole network: overhead, failover and the false-failover soak", () => benchSystem(progress)],
];

const USAGE = [
  "usage: npm run bench [-- --part KEY[,KEY…]] [--template NAME[,NAME…]] [--debug]",
  "  prints `name: value` lines (progress on stderr); --template limits the workloads part's per-template figures",
  `  parts (all by default, in this order): ${parts.map(([key]) => key).join(", ")}`,
].join("\n");
const argv = process.argv.slice(2);
if (wantsHelp(argv)) {
  console.log(USAGE);
  process.exit(0);
}
const debug = argv.includes("--debug");
let selected = parts;
let templates: string[] | undefined;
try {
  const { values, positionals } = parseFlags(argv, {
    debug: { type: "boolean", default: false },
    help: { type: "boolean", short: "h" },
    part: { type: "string" },
    template: { type: "string" },
  });
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}": npm run bench takes no arguments`, true);
  if (values.part !== undefined) selected = selectParts(values.part);
  if (values.template !== undefined) templates = selectTemplates(values.template);
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
for (const [, name, run] of selected) {
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
  console.error(`npm run bench: ${failed.length} of ${selected.length} parts failed: ${failed.join("; ")}`);
  process.exit(1);
}
process.exit(0);

/** The names in a comma list, each one of `known`; an unknown one is a usage error naming the known ones. */
function pickNames(list: string, known: string[], what: string): string[] {
  const names = list.split(",").map((n) => n.trim());
  const unknown = names.find((n) => !known.includes(n));
  if (unknown !== undefined)
    throw new UsageError(`unknown ${what} "${unknown}" (${what}s: ${known.join(", ")})`, false);
  return names;
}

/** The parts `--part` names, in the bench's own order. */
function selectParts(list: string): typeof parts {
  const keys = pickNames(
    list,
    parts.map(([key]) => key),
    "part",
  );
  return parts.filter(([key]) => keys.includes(key));
}

/** The templates `--template` names for the workloads part. */
function selectTemplates(list: string): string[] {
  return pickNames(
    list,
    listTemplates().map((t) => t.descriptor.name),
    "template",
  );
}

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split("\n")[0];
}
