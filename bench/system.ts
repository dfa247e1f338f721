/**
 * Whole-network figures from real runs of the `npm start` scenario on this machine:
 * - overhead_ratio: wall time of N MNIST steps through GPUChain (local chain, 3 verifiers, keepers, checkpoints;
 *   an honest run, no kill) ÷ the same N steps trained plainly in one process, same machine, same run;
 * - failover_seconds and lost_steps: the standard scenario (faulty provider refused, alice SIGKILLed).
 */
import { createTrainer, loadTemplate } from "../workloads/index.ts";
import { runScenario, type ScenarioOptions } from "../demo/scenario.ts";

const STEPS = 600;
const INTERVAL = 100;

async function plainTrainingSeconds(steps: number): Promise<number> {
  const trainer = await createTrainer(loadTemplate("mnist-mlp"));
  const seed = "0x" + "5e".repeat(32);
  let state = trainer.initialState(seed);
  const started = performance.now();
  for (let step = 1; step <= steps; step++) state = (await trainer.trainStep(state, seed, step)).state;
  const seconds = (performance.now() - started) / 1000;
  await trainer.close();
  return seconds;
}

function scenario(runDir: string, fault: string, kill: boolean): ScenarioOptions {
  return {
    template: "mnist-mlp",
    totalSteps: STEPS,
    checkpointInterval: INTERVAL,
    dispute: false,
    fault,
    kill,
    runDir,
    deploymentId: `bench-${process.pid}-${kill ? "failover" : "clean"}`,
    timeoutMs: 900_000,
    print: () => {},
  };
}

export async function benchSystem(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  log(`system: honest run of ${STEPS} mnist-mlp steps through the whole network …`);
  const clean = await runScenario(scenario(".gpuchain/bench-clean", "", false));
  if (!clean.ok || clean.jobWallSeconds === undefined)
    throw new Error("the honest benchmark run did not keep its promises");
  const plain = await plainTrainingSeconds(STEPS);
  log("system: failover run (faulty provider, SIGKILL) …");
  const failover = await runScenario(scenario(".gpuchain/bench-failover", "garbage-weights", true));
  if (!failover.ok) throw new Error("the failover benchmark run did not keep its promises");
  return {
    gpuchain_job_seconds: round(clean.jobWallSeconds),
    plain_training_seconds: round(plain),
    overhead_ratio: round(clean.jobWallSeconds / plain),
    failover_seconds: round(failover.failoverSeconds!),
    lost_steps: failover.lostSteps!,
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;
