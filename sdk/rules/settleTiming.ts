/**
 * When a job can be settled, and so when its earnings become claimable: one rule for `gpuchain settle`,
 * `gpuchain withdraw` and whoever else tells a person. Mirrors JobEscrow.statusOf: the dispute window ends at
 * verdict + window (settleable from the next second), the arbiter may decide until the dispute's opening +
 * ARBITER_TIMEOUT (settleable from the next second). Pure.
 */
import type { JobStatusName } from "./job.ts";

/**
 * The one deadline rule (JobEscrow `statusOf`): a deadline (unix seconds; 0 = none) has passed once chain time is
 * strictly after it. At the deadline itself the window is still open. The ledger's `statusAt`, the finalizer's
 * `derivedStatus`, `settleTiming` and the dashboard all call it (one home: there used to be three).
 */
export const deadlinePassed = (deadline: bigint, now: bigint): boolean => deadline !== 0n && now > deadline;

/** The first second at which `deadlinePassed(deadline, ·)` holds. */
export const firstSecondPast = (deadline: bigint): bigint => deadline + 1n;

/**
 * The status `statusOf` reports at `now` for a job whose last known status is `last` and whose running deadline is
 * `deadline` (the dispute deadline in a dispute window, the arbiter's in a dispute): DisputeWindow turns Settleable
 * and Disputed turns ArbiterTimedOut once the deadline passed; the clock-derived ones stay (they can only be left by
 * an event); every other status does not move with the clock.
 */
export function statusAtDeadline(last: JobStatusName, deadline: bigint, now: bigint): JobStatusName {
  const passed = deadlinePassed(deadline, now);
  if (last === "DisputeWindow") return passed ? "Settleable" : last;
  if (last === "Disputed") return passed ? "ArbiterTimedOut" : last;
  return last;
}

/** The chain facts the rule needs (seconds): the verdict's time and the window, the dispute's opening. */
export interface SettleFacts {
  status: JobStatusName;
  verdictAt: bigint;
  disputeWindow: bigint;
  disputeOpenedAt: bigint;
  arbiterTimeout: bigint;
}

export type SettleTiming =
  | { kind: "now"; why: string }
  | { kind: "at"; from: bigint; why: string }
  | { kind: "done"; why: string }
  | { kind: "not-yet"; why: string };

export function settleTiming(f: SettleFacts): SettleTiming {
  switch (f.status) {
    case "Settleable":
      return { kind: "now", why: "its dispute window has ended" };
    case "ArbiterTimedOut":
      return { kind: "now", why: "the arbiter did not decide in time: the verdict stands and the bond comes back" };
    case "DisputeWindow":
      return { kind: "at", from: firstSecondPast(f.verdictAt + f.disputeWindow), why: "when its dispute window ends" };
    case "Disputed":
      return {
        kind: "at",
        from: firstSecondPast(f.disputeOpenedAt + f.arbiterTimeout),
        why: "when the arbiter decides, or else when the arbiter's time runs out",
      };
    case "Settled":
    case "Cancelled":
      return { kind: "done", why: `it is ${f.status.toLowerCase()} already` };
    default:
      return { kind: "not-yet", why: `it is ${f.status}: a job settles after its verdict and dispute window` };
  }
}
