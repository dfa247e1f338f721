/**
 * The TypeScript twin of JobEscrow's EIP-712 digests and of the Safe's EIP-1271 message signatures.
 * A verifier signs the escrow digest as a SafeMessage; anyone relays two owners' signatures to the escrow,
 * which asks the Safe (through its CompatibilityFallbackHandler) whether they are valid.
 */
import { AbiCoder, TypedDataEncoder, getAddress, verifyTypedData, type Signer, type TypedDataDomain } from "ethers";

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

/**
 * EIP-712 types from the struct's type string, written exactly as the contract hashes it (its TYPEHASH), so the
 * TypeScript twin and the Solidity side read the same text: `"Verdict(uint256 jobId,bytes32 modelHash)"`.
 */
export function typesFromSignature(signature: string): Record<string, { name: string; type: string }[]> {
  const m = /^(\w+)\((.*)\)$/.exec(signature);
  if (!m) throw new Error(`not an EIP-712 struct type: ${signature}`);
  const fields = m[2].split(",").map((f) => {
    const [type, name] = f.trim().split(" ");
    return { name, type };
  });
  return { [m[1]]: fields };
}

export const checkpointDecisionTypes = typesFromSignature(
  "CheckpointDecision(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,bool accept)",
);

/** Flat, as the contract hashes it (FAULT_REFUSAL_TYPEHASH): the fault's fields follow the checkpoint's. */
export const faultRefusalTypes = typesFromSignature(
  "FaultRefusal(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,uint32 faultStep," +
    "bytes32 inputHash,bytes32 committedHash,bytes32 replayedHash,address finder)",
);

/**
 * A verifier's answer to another verifier's fault claim (off chain only: the collector counts it, the escrow never
 * sees it). `reproduced` is false: a reproduced claim is answered by signing the claim's FaultRefusal itself.
 */
export interface ClaimCheck {
  jobId: bigint;
  epoch: bigint;
  step: number;
  checkpointHash: string;
  claimDigest: string;
  reproduced: boolean;
}

export const claimCheckTypes = typesFromSignature(
  "ClaimCheck(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,bytes32 claimDigest,bool reproduced)",
);

export const verdictTypes = typesFromSignature("Verdict(uint256 jobId,bytes32 modelHash,uint256 metric,bool passed)");

/** Safe v1.4.1's EIP-712 SafeMessage (CompatibilityFallbackHandler): the one definition in this repository. */
export const SAFE_MESSAGE_TYPES = typesFromSignature("SafeMessage(bytes message)");

/** The Safe's own EIP-712 domain (no name or version) and the SafeMessage wrapping an escrow digest. */
export function safeMessage(chainId: bigint, safe: string, digest: string) {
  return {
    domain: { chainId, verifyingContract: safe } satisfies TypedDataDomain,
    types: SAFE_MESSAGE_TYPES,
    value: { message: AbiCoder.defaultAbiCoder().encode(["bytes32"], [digest]) },
  };
}

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

export function claimCheckDigest(domain: TypedDataDomain, c: ClaimCheck): string {
  return TypedDataEncoder.hash(domain, claimCheckTypes, c);
}

export function verdictDigest(domain: TypedDataDomain, verdict: VerdictMessage): string {
  return TypedDataEncoder.hash(domain, verdictTypes, verdict);
}

/** One Safe owner's signature over `digest`, as Safe v1.4.1's EIP-1271 handler expects (an EIP-712 SafeMessage). */
export async function signAsSafeOwner(owner: Signer, chainId: bigint, safe: string, digest: string): Promise<string> {
  const m = safeMessage(chainId, safe, digest);
  return owner.signTypedData(m.domain, m.types, m.value);
}

/** The address whose SafeMessage signature over `digest` this is (throws on a malformed signature). */
export function recoverSafeSigner(chainId: bigint, safe: string, digest: string, signature: string): string {
  const m = safeMessage(chainId, safe, digest);
  return verifyTypedData(m.domain, m.types, m.value, signature);
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
