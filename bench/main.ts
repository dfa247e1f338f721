/**
 * `npm run bench`: every performance figure as plain `name: value` lines, measured in one run on this machine,
 * so runs can be compared line by line. Progress goes to stderr.
 */
import { benchWorkloads } from "./workloads.ts";
import { benchAgent } from "./agent.ts";
import { benchVerifier } from "./verifier.ts";
import { benchGas } from "./gas.ts";
import { benchSystem } from "./system.ts";
import { benchDashboard } from "./dashboard.ts";

const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);

const parts: [string, () => Promise<Record<string, number>>][] = [
  ["training throughput per template", benchWorkloads],
  ["agent time outside training", benchAgent],
  ["verifier compute and detection", benchVerifier],
  ["gas of a full job lifecycle", benchGas],
  ["whole network: overhead and failover", () => benchSystem(progress)],
  ["dashboard: bundle, first render, playback", () => benchDashboard(progress)],
];

for (const [name, run] of parts) {
  progress(`${name} …`);
  const started = performance.now();
  for (const [key, value] of Object.entries(await run())) console.log(`${key}: ${value}`);
  progress(`${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
process.exit(0);
