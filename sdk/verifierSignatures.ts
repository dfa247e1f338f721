/**
 * The TypeScript twin of JobEscrow's EIP-712 digests and of the Safe's EIP-1271 message signatures.
 * A verifier signs the escrow digest as a SafeMessage; anyone relays two owners' signatures to the escrow,
 * which asks the Safe (through its CompatibilityFallbackHandler) whether they are valid.
 */
import { AbiCoder, TypedDataEncoder, getAddress, type Signer, type TypedDataDomain } from "ethers";

export interface CheckpointDecision {
  jobId: bigint;
  epoch: bigint;
  step: number;
  checkpointHash: string;
  accept: boolean;
}

/** A fault the verifiers proved by replaying one step (IJobEscrow.Fault). */
export interface Fault {
  step: number;
  inputHash: string;
  committedHash: string;
  replayedHash: string;
  finder: string;
}

/** A refusal that carries a proven fault: the checkpoint it refuses and the fault (slashes the reporter). */
export interface FaultRefusal {
  jobId: bigint;
  epoch: bigint;
  step: number;
  checkpointHash: string;
  fault: Fault;
}

export interface VerdictMessage {
  jobId: bigint;
  modelHash: string;
  metric: bigint;
  passed: boolean;
}

export const checkpointDecisionTypes = {
  CheckpointDecision: [
    { name: "jobId", type: "uint256" },
    { name: "epoch", type: "uint64" },
    { name: "step", type: "uint32" },
    { name: "checkpointHash", type: "bytes32" },
    { name: "accept", type: "bool" },
  ],
};

/** Flat, as the contract hashes it (FAULT_REFUSAL_TYPEHASH): the fault's fields follow the checkpoint's. */
export const faultRefusalTypes = {
  FaultRefusal: [
    { name: "jobId", type: "uint256" },
    { name: "epoch", type: "uint64" },
    { name: "step", type: "uint32" },
    { name: "checkpointHash", type: "bytes32" },
    { name: "faultStep", type: "uint32" },
    { name: "inputHash", type: "bytes32" },
    { name: "committedHash", type: "bytes32" },
    { name: "replayedHash", type: "bytes32" },
    { name: "finder", type: "address" },
  ],
};

export const verdictTypes = {
  Verdict: [
    { name: "jobId", type: "uint256" },
    { name: "modelHash", type: "bytes32" },
    { name: "metric", type: "uint256" },
    { name: "passed", type: "bool" },
  ],
};

const safeMessageTypes = { SafeMessage: [{ name: "message", type: "bytes" }] };

export function escrowDomain(chainId: bigint, escrow: string): TypedDataDomain {
  return { name: "GPUChain JobEscrow", version: "1", chainId, verifyingContract: escrow };
}

export function checkpointDecisionDigest(domain: TypedDataDomain, decision: CheckpointDecision): string {
  return TypedDataEncoder.hash(domain, checkpointDecisionTypes, decision);
}

export function faultRefusalDigest(domain: TypedDataDomain, r: FaultRefusal): string {
  const { fault } = r;
  return TypedDataEncoder.hash(domain, faultRefusalTypes, {
    jobId: r.jobId,
    epoch: r.epoch,
    step: r.step,
    checkpointHash: r.checkpointHash,
    faultStep: fault.step,
    inputHash: fault.inputHash,
    committedHash: fault.committedHash,
    replayedHash: fault.replayedHash,
    finder: fault.finder,
  });
}

export function verdictDigest(domain: TypedDataDomain, verdict: VerdictMessage): string {
  return TypedDataEncoder.hash(domain, verdictTypes, verdict);
}

/** One Safe owner's signature over `digest`, as Safe v1.4.1's EIP-1271 handler expects (an EIP-712 SafeMessage). */
export async function signAsSafeOwner(
  owner: Signer,
  chainId: bigint,
  safe: string,
  digest: string,
): Promise<string> {
  const message = AbiCoder.defaultAbiCoder().encode(["bytes32"], [digest]);
  return owner.signTypedData({ chainId, verifyingContract: safe }, safeMessageTypes, { message });
}

/** The Safe checks signatures in ascending owner order; duplicates would count once and fail the threshold. */
export function packSafeSignatures(signatures: { signer: string; signature: string }[]): string {
  const sorted = [...signatures].sort((a, b) => {
    const x = BigInt(getAddress(a.signer));
    const y = BigInt(getAddress(b.signer));
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return "0x" + sorted.map((s) => s.signature.slice(2)).join("");
}
