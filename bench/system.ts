/**
 * Whole-network figures from real runs of the `npm start` scenario on this machine (local chain, 3 verifiers,
 * keepers, 3 provider agents, embedded S3 store), each compared with the same steps trained plainly in one
 * process in the same bench run:
 * - the short job (600 MNIST steps, checkpoint every 100): overhead_ratio, one checkpoint's latency by phase
 *   (bench/timeline.ts, from the run's recorded logs), the provider's stall share from its own training record;
 * - a real-length job (plain training until ≥ 60 s have passed, then those steps through the network; checkpoint
 *   every LONG_INTERVAL), twice: overhead_ratio_long with the provider on "a machine of its own" (the chain,
 *   keepers and verifiers at niceness BACKGROUND_NICE, so the working trainer has its core as in production, where
 *   those run elsewhere), overhead_ratio_long_shared with every process at the same priority (as `npm start`);
 * - the standard failover scenario (a faulty provider refused, alice SIGKILLed): failover_seconds and its parts,
 *   lost_steps exactly (the chain's resume step and alice's per-step record, `--step-log`);
 * - false_failovers: providers unassigned (the chain's ProviderUnassigned events) in the honest runs and the soak
 *   (bench/soak.ts: ≥ 10 minutes on a busy machine), where nobody died.
 * `node bench/system.ts` runs it alone (about 6 minutes on a quiet 2-core machine, plus the soak);
 * BENCH_LONG_SECONDS sets the plain-training length of the long job (default 60), BENCH_SOAK=0 skips the soak.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createTrainer, loadTemplate } from "../workloads/index.ts";
import { FAST_DETECTION } from "../demo/actors.ts";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../demo/scenario.ts";
import { benchSoak, unassignsByReason } from "./soak.ts";
import { checkpointLatency, failoverParts, recordedLogs, trainingRecords, type LogLine } from "./timeline.ts";

const STEPS = 600;
const INTERVAL = 100;
const LONG_INTERVAL = 500;
const LONG_SECONDS = Number(process.env.BENCH_LONG_SECONDS ?? 60);
const SEED = "0x" + "5e".repeat(32);
const BACKGROUND_NICE = 10; // CFS weight 110 against the provider's 1024: about a tenth of a core when contended
const SOAK = process.env.BENCH_SOAK !== "0";

/**
 * Plain training of MNIST in this process (trainer created first, as the agent's is): `steps` steps, or with
 * `minSeconds` until that long has passed and the step count is a whole number of `multiple`s.
 */
async function plainTraining(steps: number, minSeconds = 0, multiple = 1): Promise<{ steps: number; seconds: number }> {
  const trainer = await createTrainer(loadTemplate("mnist-mlp"));
  let state = trainer.initialState(SEED);
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  let step = 0;
  while (step < steps || elapsed() < minSeconds || step % multiple !== 0) {
    step++;
    state = (await trainer.trainStep(state, SEED, step)).state;
  }
  const seconds = elapsed();
  await trainer.close();
  return { steps: step, seconds };
}

const plainTrainingSeconds = async (steps: number) => (await plainTraining(steps)).seconds;

function scenario(name: string, o: Partial<ScenarioOptions>): ScenarioOptions {
  return {
    template: "mnist-mlp",
    totalSteps: STEPS,
    checkpointInterval: INTERVAL,
    dispute: false,
    fault: "",
    kill: false,
    runDir: `.gpuchain/bench-${name}`,
    deploymentId: `bench-${process.pid}-${name}`,
    timeoutMs: 900_000,
    print: () => {},
    detection: FAST_DETECTION,
    ...o,
  };
}

interface Run {
  result: ScenarioResult;
  logs: LogLine[];
  wallSeconds: number;
  /** The chain's ProviderUnassigned events of the run, by reason. */
  unassigned: Record<string, number>;
}

export async function run(name: string, o: Partial<ScenarioOptions>): Promise<Run> {
  const started = performance.now();
  let unassigned: Record<string, number> = {};
  const beforeStop: ScenarioOptions["beforeStop"] = async ({ protocol }) =>
    void (unassigned = await unassignsByReason(protocol));
  const result = await runScenario(scenario(name, { ...o, beforeStop }));
  if (!result.ok || result.jobWallSeconds === undefined) {
    throw new Error(`the ${name} benchmark run did not keep its promises`);
  }
  const logs = recordedLogs(path.join(`.gpuchain/bench-${name}`, "recording.jsonl"));
  return { result, logs, wallSeconds: (performance.now() - started) / 1000, unassigned };
}

const unassignCount = (r: Run) => Object.values(r.unassigned).reduce((a, b) => a + b, 0);

/** The working provider's stall share over the run (its training records: the longest one is the job's). */
export function stallShare(logs: LogLine[]): { stall: number; outside: number } {
  const recs = trainingRecords(logs).filter((r) => r.finished === true);
  const main = recs.sort((a, b) => Number(b.wallMs) - Number(a.wallMs))[0];
  return main
    ? { stall: Number(main.stallShare), outside: Number(main.outsideTrainingShare) }
    : { stall: NaN, outside: NaN };
}

export async function benchSystem(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  log(`system: honest run of ${STEPS} mnist-mlp steps through the whole network …`);
  const clean = await run("clean", {});
  const plain = await plainTrainingSeconds(STEPS);
  // As many steps as take ≥ LONG_SECONDS of plain training here, then the same steps through the network.
  const { steps: long, seconds: plainLong } = await plainTraining(0, LONG_SECONDS, LONG_INTERVAL);
  log(`system: real-length job, ${long} steps (${plainLong.toFixed(1)} s plain), checkpoint every ${LONG_INTERVAL} …`);
  const longShape = { totalSteps: long, checkpointInterval: LONG_INTERVAL };
  const longRun = await run("long", { ...longShape, backgroundNice: BACKGROUND_NICE });
  log("system: the same real-length job with every process at the same priority …");
  const longShared = await run("long-shared", longShape);
  log("system: failover run (faulty provider, SIGKILL) …");
  const failover = await run("failover", { fault: "garbage-weights", kill: true });
  const fr = failover.result;
  const parts = fr.killedAt === undefined ? undefined : failoverParts(failover.logs, fr.killedAt);
  log("system: char-transformer, 600 steps on Moby-Dick through the whole network …");
  const text = await run("char-transformer", {
    template: "char-transformer",
    totalSteps: 600,
    checkpointInterval: 100,
  });
  const shortStall = stallShare(clean.logs);
  const longStall = stallShare(longRun.logs);
  const honest = [clean, longRun, longShared];
  const soak = SOAK ? await benchSoak(log) : undefined;
  return {
    gpuchain_job_seconds: round(clean.result.jobWallSeconds!),
    // The whole char-transformer run, chain start to settlement (target ≤ 600 s), and the verdict's held-out loss
    char_transformer_job_seconds: round(text.wallSeconds),
    char_transformer_heldout_loss: Number(text.result.metric ?? NaN) / 10_000,
    plain_training_seconds: round(plain),
    overhead_ratio: round(clean.result.jobWallSeconds! / plain),
    ...checkpointLatency(clean.logs),
    provider_stall_share: shortStall.stall,
    provider_outside_training_share: shortStall.outside,
    long_job_steps: long,
    long_job_interval: LONG_INTERVAL,
    gpuchain_job_seconds_long: round(longRun.result.jobWallSeconds!),
    plain_training_seconds_long: round(plainLong),
    overhead_ratio_long: round(longRun.result.jobWallSeconds! / plainLong),
    provider_stall_share_long: longStall.stall,
    provider_outside_training_share_long: longStall.outside,
    long_job_background_nice: BACKGROUND_NICE,
    gpuchain_job_seconds_long_shared: round(longShared.result.jobWallSeconds!),
    overhead_ratio_long_shared: round(longShared.result.jobWallSeconds! / plainLong),
    provider_stall_share_long_shared: stallShare(longShared.logs).stall,
    failover_seconds: round(fr.failoverSeconds!),
    ...(parts ?? {}),
    lost_steps: fr.lostSteps!,
    lost_steps_resume_step: fr.lostWork?.resumeStep ?? NaN,
    lost_steps_killed_trained_step: fr.lostWork?.trainedStep ?? NaN,
    // Nobody died in the honest runs nor in the soak: every unassignment there is a false failover.
    false_failovers: honest.reduce((n, r) => n + unassignCount(r), 0) + (soak?.false_failovers_soak ?? 0),
    false_failovers_honest_runs: honest.reduce((n, r) => n + unassignCount(r), 0),
    false_failovers_honest_runs_seconds: round(honest.reduce((s, r) => s + r.wallSeconds, 0)),
    ...(soak ?? {}),
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  for (const [k, v] of Object.entries(await benchSystem(progress))) console.log(`${k}: ${v}`);
  process.exit(0);
}
