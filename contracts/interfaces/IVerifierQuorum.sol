// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "./IJobEscrow.sol";

/// @title IVerifierQuorum
/// @notice The part of the escrow that says whether the verifier Safe decided: the EIP-712 digests its owners sign
/// (checkpoint decisions, fault refusals, verdicts) and the Safe that must have signed them. `IJobEscrow` inherits
/// it, so the escrow's ABI is unchanged. A refused signature reverts with `IJobEscrow`'s
/// `JobEscrowInvalidVerifierSignatures(digest)` (declared there, where the escrow's callers look for it).
interface IVerifierQuorum {
    /// @notice EIP-712 type hash of `FaultRefusal(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,
    /// uint32 faultStep,bytes32 inputHash,bytes32 committedHash,bytes32 replayedHash,address finder)`.
    function FAULT_REFUSAL_TYPEHASH() external view returns (bytes32);
    /// @notice EIP-712 type hash of `CheckpointDecision(uint256 jobId,uint64 epoch,uint32 step,bytes32
    /// checkpointHash,bool accept)`.
    function CHECKPOINT_DECISION_TYPEHASH() external view returns (bytes32);
    /// @notice EIP-712 type hash of `Verdict(uint256 jobId,bytes32 modelHash,uint256 metric,bool passed)`.
    function VERDICT_TYPEHASH() external view returns (bytes32);
    /// @notice The 2-of-3 verifier Safe. Its owners rotate through the Safe itself, never through this contract.
    /// @dev Warning: two colluding verifier keys control every acceptance, refusal and verdict.
    function verifierSafe() external view returns (address);

    /// @notice EIP-712 digest the verifier Safe signs (as an EIP-1271 message) to accept or refuse a checkpoint.
    /// @param jobId The job.
    /// @param epoch The epoch the checkpoint was reported at.
    /// @param step The checkpoint's step.
    /// @param checkpointHash The checkpoint's hash.
    /// @param accept True to accept, false to refuse.
    function checkpointDecisionDigest(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bool accept
    ) external view returns (bytes32);
    /// @notice EIP-712 digest the verifier Safe signs to refuse a checkpoint for a proven fault.
    /// @param jobId The job.
    /// @param epoch The epoch the checkpoint was reported at.
    /// @param step The checkpoint's step.
    /// @param checkpointHash The checkpoint's hash.
    /// @param fault The fault.
    function faultRefusalDigest(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        IJobEscrow.Fault calldata fault
    ) external view returns (bytes32);
    /// @notice EIP-712 digest the verifier Safe signs for a verdict.
    /// @param jobId The job.
    /// @param modelHash The final model's hash.
    /// @param metric The evaluation metric.
    /// @param passed Whether it passed.
    function verdictDigest(
        uint256 jobId,
        bytes32 modelHash,
        uint256 metric,
        bool passed
    ) external view returns (bytes32);
}
