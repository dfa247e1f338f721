/**
 * The false-failover soak (the target: no false failover in a 10-minute run on the busy 2-core machine): one honest
 * network with the fast detection (250 ms beats, 2.5 s timeout, 250 ms ticks) training a job too long to finish
 * for BENCH_SOAK_SECONDS (default 600) of wall time from its creation, while BENCH_SOAK_LOAD (default 2)
 * busy-looping processes keep the machine busy whatever else runs. Then the chain says who was unassigned
 * (ProviderUnassigned, with its reason): nobody died, so every one is a false failover. The run is then stopped.
 * `node bench/soak.ts` runs it alone.
 */
import { spawn, type ChildProcess } from "node:child_process";
import os from "node:os";
import { pathToFileURL } from "node:url";
import type { Protocol } from "../sdk/node/contracts.ts";
import { sleep } from "../sdk/run/retry.ts";
import { FAST_DETECTION } from "../demo/actors.ts";
import { runScenario } from "../demo/scenario.ts";

export const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
const SOAK_LOAD = Number(process.env.BENCH_SOAK_LOAD ?? 2);
const INTERVAL = 500;
const SAMPLE_MS = 5_000;
const REASONS = ["coordinator", "lease_lapsed", "refused"] as const; // IJobEscrow.UnassignReason, in order

/** `n` processes spinning on a core each, until `stop`; started and ended by pid. */
function busyLoad(n: number): { stop: () => void } {
  const children: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    children.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  }
  return { stop: () => children.forEach((c) => c.pid !== undefined && c.exitCode === null && c.kill("SIGKILL")) };
}

/** Every ProviderUnassigned so far, counted by reason. */
export async function unassignsByReason(protocol: Protocol): Promise<Record<string, number>> {
  const events = await protocol.escrow.queryFilter(protocol.escrow.filters.ProviderUnassigned(), 0);
  const out: Record<string, number> = Object.fromEntries(REASONS.map((r) => [r, 0]));
  for (const e of events) out[REASONS[Number(e.args.reason)] ?? `reason_${e.args.reason}`]++;
  return out;
}

interface Watch {
  protocol?: Protocol;
  createdAt?: number;
  loads: number[];
}

/** Waits for the job, then samples the load average until `seconds` have passed since its creation. */
async function watchSoak(w: Watch, seconds: number, signal: AbortSignal, log: (l: string) => void): Promise<void> {
  while (w.createdAt === undefined) {
    if (signal.aborted) return;
    if (w.protocol && (await w.protocol.escrow.jobCount().catch(() => 0n)) > 0n) w.createdAt = Date.now();
    else await sleep(500);
  }
  let lastNote = Date.now();
  while (Date.now() - w.createdAt < seconds * 1000 && !signal.aborted) {
    await sleep(Math.min(SAMPLE_MS, Math.max(0, seconds * 1000 - (Date.now() - w.createdAt))));
    w.loads.push(os.loadavg()[0]);
    if (Date.now() - lastNote >= 60_000) {
      lastNote = Date.now();
      const done = Math.round((Date.now() - w.createdAt) / 1000);
      log(`soak: ${done} / ${seconds} s, load average ${os.loadavg()[0].toFixed(1)}`);
    }
  }
}

export async function benchSoak(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  const seconds = SOAK_SECONDS;
  // More steps than the network can train in the soak even on a quiet machine (≈ 145 MNIST steps/s plainly).
  const steps = Math.ceil((seconds * 400) / INTERVAL) * INTERVAL;
  log(`soak: an honest network for ${seconds} s with ${SOAK_LOAD} busy-looping processes beside it …`);
  const load = busyLoad(SOAK_LOAD);
  const stop = new AbortController();
  const w: Watch = { loads: [] };
  let counted: Record<string, number> | undefined;
  let accepted = 0;
  const scenario = runScenario({
    template: "mnist-mlp",
    totalSteps: steps,
    checkpointInterval: INTERVAL,
    dispute: false,
    fault: "",
    kill: false,
    runDir: ".gpuchain/bench-soak",
    deploymentId: `bench-${process.pid}-soak`,
    timeoutMs: (seconds + 900) * 1000,
    print: () => {},
    detection: FAST_DETECTION,
    signal: stop.signal,
    onNetworkUp: async ({ protocol }) => void (w.protocol = protocol),
  });
  const ended = scenario.then(
    () => "settled",
    (err: Error) => (stop.signal.aborted ? "stopped" : Promise.reject(err)),
  );
  let soakSeconds = 0;
  try {
    await Promise.race([watchSoak(w, seconds, stop.signal, log), ended]);
    if (w.protocol && w.createdAt !== undefined) {
      soakSeconds = (Date.now() - w.createdAt) / 1000;
      counted = await unassignsByReason(w.protocol);
      accepted = (await w.protocol.escrow.queryFilter(w.protocol.escrow.filters.CheckpointAccepted(), 0)).length;
    }
  } finally {
    stop.abort();
    await ended.catch(() => undefined);
    load.stop();
  }
  if (!counted) throw new Error("the soak's network stopped before its job was created");
  const mean = w.loads.reduce((a, b) => a + b, 0) / Math.max(1, w.loads.length);
  return {
    false_failovers_soak: Object.values(counted).reduce((a, b) => a + b, 0),
    ...Object.fromEntries(Object.entries(counted).map(([r, n]) => [`false_failovers_soak_${r}`, n])),
    false_failovers_soak_seconds: round(soakSeconds),
    false_failovers_soak_load: round(mean),
    false_failovers_soak_load_min: round(Math.min(...w.loads)),
    false_failovers_soak_busy_processes: SOAK_LOAD,
    false_failovers_soak_checkpoints_accepted: accepted,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  for (const [k, v] of Object.entries(await benchSoak(progress))) console.log(`${k}: ${v}`);
  process.exit(0);
}
