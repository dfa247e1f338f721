// The provider agent's time outside training, per workload template, at the default checkpoint interval (50,
// as `gpuchain job create`). Measured on Hardhat's simulated chain with the real agent in-process (default
// timings, trainer warmed up by a first job), a file-system checkpoint store in a temp dir and verifiers stood in
// for by an instant 2-of-3 acceptor. The chain runs in the same process, so its work competes with the agent's.
// `node bench/agent.ts` prints `name: value` lines.
//   agent_outside_training_share_<t>  1 - (time inside trainer.trainStep) / (wall time from the first step to the
//                                     final report mined): hashing, encoding, store puts, fence checks, reports,
//                                     waiting for decisions not hidden by training ahead
//   agent_checkpoint_build_ms_<t>     encode every state + hash chain + checkpoint blob, per checkpoint (pure)
//   agent_store_put_ms_<t>            wall time to put one checkpoint's blobs (interval+1 states and the checkpoint)
//                                     in a fresh file-system store
//   agent_end_to_end_steps_per_second_<t>  steps / wall time, as the job saw it
import { rm } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { putUpload } from "../agent/blobs.ts";
import { honestUpload } from "../agent/segment.ts";
import { isAbandoned, trainSegment } from "../agent/train.ts";
import { DEFAULT_TIMING } from "../agent/types.ts";
import { createTrainer, listTemplates, ZERO_HASH, type Template, type Trainer } from "../workloads/index.ts";
import { localProtocol, staked, startAgent, tmpStore, until } from "../test/agent/helpers.ts";
import { TEST_MAKER, TEST_PROFILE } from "../test/verifier/helpers.ts";

const INTERVAL = 50;
const CHECKPOINTS = 4;
const SEED = "0x" + "5e".repeat(32);

const round = (x: number) => Math.round(x * 1000) / 1000;

/** Wraps a trainer factory so the agent's time inside trainer.trainStep is measured (reset per job). */
function instrument() {
  const m = { trainMs: 0, firstStepAt: 0 };
  const trainerFactory = async (t: Template, o?: Parameters<typeof createTrainer>[1]): Promise<Trainer> => {
    const tr = await createTrainer(t, o);
    return {
      ...tr,
      trainStep: async (s, seed, step, so) => {
        const t0 = performance.now();
        if (!m.firstStepAt) m.firstStepAt = t0;
        try {
          return await tr.trainStep(s, seed, step, so);
        } finally {
          m.trainMs += performance.now() - t0;
        }
      },
    };
  };
  return { m, trainerFactory };
}

type Bench = Awaited<ReturnType<typeof localProtocol>>;

/** Runs one job through the agent, accepting every checkpoint at once; returns the wall time to the final report. */
async function runJob(p: Bench, address: string, t: Template, checkpoints: number): Promise<number> {
  const totalSteps = INTERVAL * checkpoints;
  const jobId = await p.createJob(totalSteps, INTERVAL, t.templateId);
  await (await p.escrow.connect(p.coordinator).assign(jobId, address)).wait();
  for (;;) {
    const job = await p.escrow.jobOf(jobId);
    if (job.pendingStep === BigInt(totalSteps)) {
      const at = performance.now();
      await p.decide(jobId, true); // the agent is done with the job and moves on
      return at;
    }
    if (job.pendingStep !== 0n) await p.decide(jobId, true);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Outside-training share and end-to-end speed of a warmed-up agent (a first, unmeasured job warms the trainer). */
async function agentRun(p: Bench, t: Template) {
  const wallet = await p.fundedWallet();
  const store = await tmpStore();
  const { m, trainerFactory } = instrument();
  const agent = await startAgent(wallet, p.deployment, {
    store,
    deps: { trainerFactory },
    config: { ...DEFAULT_TIMING, idleMs: 50 },
  });
  try {
    // The agent stakes right after registering; an unstaked provider cannot be assigned.
    await until("registration and stake", () => staked(p.registry, wallet.address));
    await runJob(p, wallet.address, t, 1);
    m.trainMs = 0;
    m.firstStepAt = 0;
    const finalAt = await runJob(p, wallet.address, t, CHECKPOINTS);
    const wall = finalAt - m.firstStepAt;
    return { share: 1 - m.trainMs / wall, stepsPerSecond: (INTERVAL * CHECKPOINTS) / (wall / 1000) };
  } finally {
    await agent.stop();
    await rm(store.dir, { recursive: true, force: true });
  }
}

/** Pure cost of building one checkpoint's upload, and the wall time of putting it in a fresh file-system store. */
async function uploadMs(t: Template): Promise<{ build: number; put: number }> {
  const tr = await createTrainer(t);
  try {
    const seg = await trainSegment(
      tr,
      {
        templateId: t.templateId,
        seed: SEED,
        prevCheckpointHash: ZERO_HASH,
        start: tr.initialState(SEED),
        maker: TEST_MAKER,
        profile: TEST_PROFILE,
      },
      INTERVAL,
    );
    if (isAbandoned(seg)) throw new Error("abandoned");
    const n = 3;
    let build = 0;
    let put = 0;
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const up = honestUpload(seg);
      const t1 = performance.now();
      const store = await tmpStore();
      await putUpload(store, up);
      put += performance.now() - t1;
      build += t1 - t0;
      await rm(store.dir, { recursive: true, force: true });
    }
    return { build: build / n, put: put / n };
  } finally {
    await tr.close();
  }
}

export async function benchAgent(): Promise<Record<string, number>> {
  const p = await localProtocol();
  const out: Record<string, number> = {};
  for (const t of listTemplates()) {
    const name = t.descriptor.name;
    const r = await agentRun(p, t);
    const u = await uploadMs(t);
    out[`agent_outside_training_share_${name}`] = round(r.share);
    out[`agent_checkpoint_build_ms_${name}`] = round(u.build);
    out[`agent_store_put_ms_${name}`] = round(u.put);
    out[`agent_end_to_end_steps_per_second_${name}`] = round(r.stepsPerSecond);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [k, v] of Object.entries(await benchAgent())) console.log(`${k}: ${v}`);
  process.exit(0);
}
