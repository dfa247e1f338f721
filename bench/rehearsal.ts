/**
 * The rehearsal's figures: the short `npm start` job (test/helpers/scenario.ts SHORT_RUN: blobs-tiny, 60 steps in
 * checkpoints of 10, a faulty provider, alice SIGKILLed) on the rehearsal network (demo/rehearsal.ts: anvil with
 * 2-s blocks, a fault proxy per part, three reorgs, a gas spike) and the same job on the plain local chain, in one
 * bench run:
 * - rehearsal_job_seconds / plain_job_seconds and their ratio (job creation to verdict, as gpuchain_job_seconds);
 * - injected faults by kind (the proxies' counters), reorgs and spikes injected;
 * - RPC calls per job (every part's JSON-RPC calls through its proxy, set-up to settlement) and the keepers' calls
 *   per second of their run (the keeper process runs four keepers, each ticking every second and woken early by
 *   new blocks, so a second is the budget unit a public endpoint's rate limit counts in);
 * - rehearsal_false_actions: transactions of the run that reverted on the final chain (a stale view: a report sent
 *   on an acceptance a reorg removed), and of them the ones that move money, plus money transactions a reorg
 *   dropped and nobody sent again (target 0).
 * `node bench/rehearsal.ts` runs it alone (about 6 minutes on a quiet 2-core machine).
 */
import { pathToFileURL } from "node:url";
import { runScenario, type ScenarioOptions } from "../demo/scenario.ts";
import { SHORT_RUN } from "../test/helpers/scenario.ts";

function shortJob(name: string, o: Partial<ScenarioOptions>): ScenarioOptions {
  return {
    ...SHORT_RUN,
    runDir: `.gpuchain/bench-${name}`,
    deploymentId: `bench-${process.pid}-${name}`,
    timeoutMs: 900_000,
    print: () => {},
    ...o,
  };
}

export async function benchRehearsal(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  log("rehearsal: the short job on the rehearsal network (2-s blocks, RPC faults, 3 reorgs, a gas spike) …");
  const rehearsed = await runScenario(shortJob("rehearsal", { rehearsal: true }));
  const r = rehearsed.rehearsal;
  if (!rehearsed.ok || !r || r.jobSeconds === undefined) throw new Error("the rehearsal run did not keep its promises");
  log("rehearsal: the same job on the plain local chain …");
  const plain = await runScenario(shortJob("rehearsal-plain", {}));
  if (!plain.ok || plain.jobWallSeconds === undefined) throw new Error("the plain run did not keep its promises");
  const calls = Object.values(r.callsPerPart).reduce((a, b) => a + b, 0);
  return {
    rehearsal_job_seconds: round(r.jobSeconds),
    rehearsal_plain_job_seconds: round(plain.jobWallSeconds),
    rehearsal_job_ratio: round(r.jobSeconds / plain.jobWallSeconds),
    rehearsal_rpc_requests: r.injected.requests,
    rehearsal_faults_http429: r.injected.http429,
    rehearsal_faults_drop: r.injected.drop,
    rehearsal_faults_truncate: r.injected.truncate,
    rehearsal_faults_http5xx: r.injected.http5xx,
    rehearsal_reorgs: r.reorgs,
    rehearsal_gas_spikes: 1,
    rehearsal_rpc_calls_per_job: calls,
    rehearsal_rpc_calls_keepers: r.callsPerPart.keepers ?? 0,
    rehearsal_rpc_calls_keepers_per_second: round((r.callsPerPart.keepers ?? 0) / (r.secondsPerPart.keepers || NaN)),
    rehearsal_rpc_calls_per_provider_per_second: round((r.callsPerPart.bob ?? 0) / (r.secondsPerPart.bob || NaN)),
    rehearsal_false_actions: r.falseActions,
    rehearsal_false_actions_money: r.moneyFalseActions,
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  for (const [k, v] of Object.entries(await benchRehearsal(progress))) console.log(`${k}: ${v}`);
  process.exit(0);
}
