/**
 * How a verifier decides, injected: `honest` verifies; `always-accept`, `always-refuse` and `false-claim` are
 * malicious verifiers for tests and demos (the Quality Guard must hold against one of them). The honest path never
 * branches on a mode: the Verifier asks its behaviour.
 */
import { createHash } from "node:crypto";
import type { Checkpoint } from "../workloads/index.ts";
import type { CheckpointVerdict, ReplayFault } from "./checks.ts";

export const BEHAVIOURS = ["honest", "always-accept", "always-refuse", "false-claim"] as const;
export type BehaviourName = (typeof BEHAVIOURS)[number];

export interface VerifierBehaviour {
  name: BehaviourName;
  /** Whether it really verifies (the malicious ones are logged loudly at start). */
  honest: boolean;
  /** The checkpoint decision: `verify` runs the checks (checks.ts); `intervalSteps` is the report's length. */
  checkpoint(verify: () => Promise<CheckpointVerdict>, intervalSteps: number): Promise<CheckpointVerdict>;
  /** The verdict's `passed`, given what evaluating the final model measured. */
  passed(measured: boolean): boolean;
  /** `false-claim` only: the fault it claims on every checkpoint, whatever the replay gave. */
  forgeFault?(c: Checkpoint): ReplayFault;
}

const honest: VerifierBehaviour = {
  name: "honest",
  honest: true,
  checkpoint: (verify) => verify(),
  passed: (measured) => measured,
};

/** Answers `accept` without checking anything. The verdict's metric is still measured: a made-up one would only
 * fail to combine with anyone's signature. */
function liar(name: BehaviourName, accept: boolean): VerifierBehaviour {
  return {
    name,
    honest: false,
    async checkpoint(_verify, intervalSteps) {
      return {
        accept,
        reasons: [`behaviour: ${name} (not verified)`],
        codes: ["behaviour"],
        metrics: {
          accuracy: null,
          loss: null,
          baselineAccuracy: null,
          replayedSteps: 0,
          intervalSteps,
          cpuMs: 0,
          stepCpuMs: null,
          trainingCpuMsEstimate: null,
          fullReplay: false,
          notes: [],
        },
      };
    },
    passed: () => accept,
  };
}

/**
 * Claims a fault at the last step of every checkpoint, with the committed input and output hashes (so the claim
 * is well formed) and a made-up replayed hash; the other verifiers' one-step replay must not reproduce it.
 */
const falseClaim: VerifierBehaviour = {
  name: "false-claim",
  honest: false,
  checkpoint: (verify) => verify(),
  passed: (measured) => measured,
  forgeFault(c) {
    const n = c.stepHashes.length;
    const committedHash = c.stepHashes[n - 1];
    const replayedHash = "0x" + createHash("sha256").update(`false claim ${committedHash}`).digest("hex");
    return { step: c.step, inputHash: n > 1 ? c.stepHashes[n - 2] : c.startStateHash, committedHash, replayedHash };
  },
};

const BY_NAME: Record<BehaviourName, VerifierBehaviour> = {
  honest,
  "always-accept": liar("always-accept", true),
  "always-refuse": liar("always-refuse", false),
  "false-claim": falseClaim,
};

/** The behaviour called `name`; a RangeError names the valid ones. */
export function verifierBehaviour(name: string): VerifierBehaviour {
  if (!(BEHAVIOURS as readonly string[]).includes(name)) {
    throw new RangeError(`behaviour must be one of ${BEHAVIOURS.join(", ")}, got "${name}"`);
  }
  return BY_NAME[name as BehaviourName];
}
