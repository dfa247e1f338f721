/**
 * When a job can be settled, and so when its earnings become claimable: one rule for `gpuchain settle`,
 * `gpuchain withdraw` and whoever else tells a person. Mirrors JobEscrow.statusOf: the dispute window ends at
 * verdict + window (settleable from the next second), the arbiter may decide until the dispute's opening +
 * ARBITER_TIMEOUT (settleable from the next second). Pure.
 */
import type { JobStatusName } from "./job.ts";

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
      return { kind: "at", from: f.verdictAt + f.disputeWindow + 1n, why: "when its dispute window ends" };
    case "Disputed":
      return {
        kind: "at",
        from: f.disputeOpenedAt + f.arbiterTimeout + 1n,
        why: "when the arbiter decides, or else when the arbiter's time runs out",
      };
    case "Settled":
    case "Cancelled":
      return { kind: "done", why: `it is ${f.status.toLowerCase()} already` };
    default:
      return { kind: "not-yet", why: `it is ${f.status}: a job settles after its verdict and dispute window` };
  }
}
