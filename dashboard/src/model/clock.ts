/**
 * The chain's clock at the moment on screen, for the time-driven states (Dispute window → Settleable, Disputed →
 * Arbiter timed out) and the countdowns. A recording shows what was true at its own moment, never the viewer's:
 * its clock is anchored on the last verdict (the escrow sets disputeDeadline = block time + the job's window, so
 * the verdict's block time is deadline − window), runs on with the recording's milliseconds and jumps where the
 * run moved a local chain's clock (sdk/run/recording.ts clockAdvancedNote). Pure.
 */
import { clockAdvanceOf } from "../../../sdk/run/recording.ts";
import type { RunState } from "./state.ts";

/**
 * Unix seconds on the recorded chain at `state.ms`; null before the first verdict (no state depends on the clock
 * then: a job's stored phase is its status).
 */
export function recordedChainNow(state: RunState): bigint | null {
  const windows = new Map<string, bigint>();
  let anchor: { ms: number; sec: bigint } | null = null;
  for (const e of state.events) {
    if (e.name === "JobCreated") windows.set(String(e.args.jobId), BigInt(String(e.args.disputeWindow)));
    if (e.name === "VerdictSubmitted") {
      const window = windows.get(String(e.args.jobId));
      if (window !== undefined) anchor = { ms: e.ms, sec: BigInt(String(e.args.disputeDeadline)) - window };
    }
  }
  if (anchor === null) return null;
  let advanced = 0;
  for (const n of state.notes) if (n.ms >= anchor.ms) advanced += clockAdvanceOf(n.text) ?? 0;
  return anchor.sec + BigInt(Math.floor((state.ms - anchor.ms) / 1000) + advanced);
}

/** The clock the page derives states from: a recording's own (above), or the wall clock for a live run. */
export function chainNow(state: RunState, recorded: boolean, wallMs: number): bigint {
  if (recorded) return recordedChainNow(state) ?? 0n;
  return BigInt(Math.floor(wallMs / 1000));
}
