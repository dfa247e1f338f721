// Rounds and lanes: each lane's data order, and one round run end to end on a real trainer.
//
// Round r starts from the accepted state S_r (at step r·H). Lane k trains steps r·H + 1 .. (r + 1)·H from S_r on its
// own data order, laneOrderSeed(job seed, K, r, k, maker): the epoch permutation of workloads/order.ts drawn from
//   laneSeed = sha256("gpuchain/lane-order\0" ‖ job seed[32] ‖ u64be(round) ‖ u8(lane) ‖ maker[20])
// so a lane's order binds its maker exactly as today's workSeed does (a copied or re-signed lane checkpoint commits
// states its own order does not produce), and no two lanes or rounds share an order. A job of K = 1 lane is today's
// job: its one lane trains on today's workSeed(job seed, maker) — one permutation per epoch across the rounds — and
// its outer step (TODAY_OUTER) returns the lane's end state, so its states and hashes are today's bit for bit.
import { createHash } from "node:crypto";
import { hexToBytes32 } from "./bytes.ts";
import { workSeed } from "./checkpoint.ts";
import { MAX_LANES, MergeError, mergeLanes, type MergeResult, type OuterParams, type OuterState } from "./merge.ts";
import { u64be } from "./prng.ts";
import type { Trainer } from "./trainer.ts";
import type { TrainingState } from "./types.ts";

const LANE_ORDER_TAG = Buffer.from("gpuchain/lane-order\0", "ascii");

function makerBytes(maker: string): Buffer {
  if (!/^0x[0-9a-fA-F]{40}$/.test(maker)) throw new TypeError(`maker ${maker} is not a 0x address`);
  return Buffer.from(maker.slice(2), "hex");
}

/** The data-order seed of lane `lane` (0-based, < MAX_LANES) of round `round` (0-based) trained by `maker`. */
export function laneSeed(jobSeed: string, round: number, lane: number, maker: string): string {
  if (!Number.isInteger(lane) || lane < 0 || lane >= MAX_LANES)
    throw new RangeError(`lane must be an integer in 0..${MAX_LANES - 1}, got ${lane}`);
  return (
    "0x" +
    createHash("sha256")
      .update(LANE_ORDER_TAG)
      .update(hexToBytes32(jobSeed))
      .update(u64be(round)) // throws on a negative or unsafe round
      .update(Buffer.of(lane))
      .update(makerBytes(maker))
      .digest("hex")
  );
}

/** The order a lane trains on in a job of `lanes` lanes: today's workSeed when K = 1, else laneSeed. */
export function laneOrderSeed(jobSeed: string, lanes: number, round: number, lane: number, maker: string): string {
  if (!Number.isInteger(lanes) || lanes < 1 || lanes > MAX_LANES)
    throw new MergeError("LANE_COUNT", `a round has 1 to ${MAX_LANES} lanes, got ${lanes}`);
  if (lane >= lanes) throw new RangeError(`lane ${lane} of a ${lanes}-lane job`);
  return lanes === 1 ? workSeed(jobSeed, maker) : laneSeed(jobSeed, round, lane, maker);
}

/** A job's round shape: its seed, K lanes, H inner steps a round, the outer optimizer. */
export type LaneJob = { seed: string; lanes: number; innerSteps: number; outer: OuterParams };

/** Lane training: H steps from `start` on `orderSeed`. */
export async function trainLane(
  tr: Trainer,
  start: TrainingState,
  orderSeed: string,
  innerSteps: number,
): Promise<TrainingState> {
  let s = start;
  for (let i = 0; i < innerSteps; i++) s = (await tr.trainStep(s, orderSeed, s.step + 1)).state;
  return s;
}

export type RoundResult = MergeResult & { lanes: TrainingState[]; mergeMs: number };

/**
 * One whole round on one trainer (a simulation: the network trains the lanes on K machines): every lane from
 * `start`, then the outer step. `makers[k]` trains lane k. The round index is start.step / H.
 */
export async function runRound(
  tr: Trainer,
  job: LaneJob,
  start: TrainingState,
  outer: OuterState,
  makers: string[],
): Promise<RoundResult> {
  const H = job.innerSteps;
  if (!Number.isInteger(H) || H < 1) throw new RangeError(`inner steps must be a positive integer, got ${H}`);
  if (start.step % H !== 0) throw new RangeError(`a round starts at a multiple of ${H} steps, not ${start.step}`);
  if (makers.length !== job.lanes) throw new RangeError(`${makers.length} makers for ${job.lanes} lanes`);
  const round = start.step / H;
  const lanes: TrainingState[] = [];
  for (let k = 0; k < job.lanes; k++)
    lanes.push(await trainLane(tr, start, laneOrderSeed(job.seed, job.lanes, round, k, makers[k]), H));
  const t0 = performance.now();
  const merged = mergeLanes(start, outer, lanes, job.outer);
  return { ...merged, lanes, mergeMs: performance.now() - t0 };
}
