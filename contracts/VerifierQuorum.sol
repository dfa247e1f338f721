// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IJobEscrow} from "./interfaces/IJobEscrow.sol";
import {ISafeOwners} from "./interfaces/ISafeOwners.sol";
import {IVerifierQuorum} from "./interfaces/IVerifierQuorum.sol";

/// @title VerifierQuorum
/// @notice Whether the verifier Safe decided: the EIP-712 digests of checkpoint decisions, fault refusals and
/// verdicts, and the check that the Safe itself called or that its owners' signatures over a digest meet its
/// threshold.
/// @dev The escrow's base for its verifier-gated calls (`JobEscrow` inherits it). No storage of its own: the
/// Safe is an immutable and the EIP-712 domain is OpenZeppelin's `EIP712`, so the deriving contract's storage
/// layout is what it was with `EIP712` as a direct base. The deriving contract checks that the Safe is not the
/// zero address. Every check is bounded by the Safe's threshold, never by jobs or providers.
abstract contract VerifierQuorum is IVerifierQuorum, EIP712 {
    /// @inheritdoc IVerifierQuorum
    bytes32 public constant CHECKPOINT_DECISION_TYPEHASH = keccak256(
        "CheckpointDecision(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,bool accept)"
    );
    /// @inheritdoc IVerifierQuorum
    bytes32 public constant FAULT_REFUSAL_TYPEHASH = keccak256(
        "FaultRefusal(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,uint32 faultStep,"
        "bytes32 inputHash,bytes32 committedHash,bytes32 replayedHash,address finder)"
    );
    /// @inheritdoc IVerifierQuorum
    bytes32 public constant VERDICT_TYPEHASH = keccak256(
        "Verdict(uint256 jobId,bytes32 modelHash,uint256 metric,bool passed)"
    );
    /// @dev Safe v1.4.1's own EIP-712 domain and message types (CompatibilityFallbackHandler's SafeMessage).
    bytes32 private constant SAFE_DOMAIN_TYPEHASH = keccak256(
        "EIP712Domain(uint256 chainId,address verifyingContract)"
    );
    bytes32 private constant SAFE_MESSAGE_TYPEHASH = keccak256("SafeMessage(bytes message)");

    /// @inheritdoc IVerifierQuorum
    address public immutable verifierSafe;

    /// @param safe The verifier Safe (checked non-zero by the deriving contract).
    /// @param name The EIP-712 domain's name.
    /// @param version The EIP-712 domain's version.
    constructor(address safe, string memory name, string memory version) EIP712(name, version) {
        verifierSafe = safe;
    }

    /// @inheritdoc IVerifierQuorum
    function checkpointDecisionDigest(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bool accept
    ) public view returns (bytes32) {
        return
            _hashTypedDataV4(
                keccak256(abi.encode(CHECKPOINT_DECISION_TYPEHASH, jobId, epoch, step, checkpointHash, accept))
            );
    }

    /// @inheritdoc IVerifierQuorum
    function faultRefusalDigest(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        IJobEscrow.Fault calldata fault
    ) public view returns (bytes32) {
        return
            _hashTypedDataV4(
                keccak256(
                    abi.encode(
                        FAULT_REFUSAL_TYPEHASH,
                        jobId,
                        epoch,
                        step,
                        checkpointHash,
                        fault.step,
                        fault.inputHash,
                        fault.committedHash,
                        fault.replayedHash,
                        fault.finder
                    )
                )
            );
    }

    /// @inheritdoc IVerifierQuorum
    function verdictDigest(
        uint256 jobId,
        bytes32 modelHash,
        uint256 metric,
        bool passed
    ) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(VERDICT_TYPEHASH, jobId, modelHash, metric, passed)));
    }

    /// @dev The Safe may call directly (a Safe transaction), or anyone may relay 2-of-3 owner signatures over the
    /// EIP-712 digest, checked by the Safe itself through EIP-1271. Relaying keeps verdicts of different jobs
    /// independent of the Safe's single transaction nonce. Reverts with `JobEscrowInvalidVerifierSignatures`.
    function _authorizeVerifiers(bytes32 digest, bytes calldata signatures) internal view {
        if (msg.sender == verifierSafe) return;
        if (_ownersSigned(digest, signatures)) return;
        if (!SignatureChecker.isValidERC1271SignatureNow(verifierSafe, digest, signatures)) {
            revert IJobEscrow.JobEscrowInvalidVerifierSignatures(digest);
        }
    }

    /// @dev The Safe's own rule for plain ECDSA owner signatures (v1.4.1 `checkNSignatures`, v = 27 or 28), run
    /// here to skip the fallback handler's round trip: the first `threshold` signatures over the SafeMessage
    /// hash of `digest`, their signers strictly ascending, each an owner now. Owners and threshold are read from
    /// the Safe on every call, so a rotation applies at once. It only ever says yes to what the Safe's EIP-1271
    /// check would accept; anything else (contract, pre-approved or eth_sign signatures, a bad one) returns
    /// false and is left to the Safe. Bounded by the Safe's threshold, not by jobs or providers.
    function _ownersSigned(bytes32 digest, bytes calldata signatures) private view returns (bool) {
        uint256 threshold = _askSafe(abi.encodeCall(ISafeOwners.getThreshold, ()));
        if (threshold == 0 || signatures.length < threshold * 65) return false;
        bytes32 domain = keccak256(abi.encode(SAFE_DOMAIN_TYPEHASH, block.chainid, verifierSafe));
        bytes32 message = keccak256(abi.encode(SAFE_MESSAGE_TYPEHASH, keccak256(abi.encode(digest))));
        bytes32 hash = keccak256(abi.encodePacked(hex"1901", domain, message));
        address last;
        for (uint256 i; i < threshold; ++i) {
            address signer = _ecdsaSigner(hash, signatures[i * 65:i * 65 + 65]);
            if (signer <= last || _askSafe(abi.encodeCall(ISafeOwners.isOwner, (signer))) != 1) return false;
            last = signer;
        }
        return true;
    }

    /// @dev One word from a view of the Safe, or 0 if the call fails or returns less (never reverts, so that a
    /// Safe that cannot answer leaves the decision to the EIP-1271 check).
    function _askSafe(bytes memory request) private view returns (uint256 word) {
        address safe = verifierSafe;
        // Scratch space for the one return word: no copy of the return data into fresh memory (1.1k gas per
        // decision). Only the call and one word of the answer; nothing else is written.
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let ok := staticcall(gas(), safe, add(request, 0x20), mload(request), 0, 0x20)
            if and(ok, gt(returndatasize(), 0x1f)) {
                word := mload(0)
            }
        }
    }

    /// @dev The signer of one Safe-packed signature (r, s, v), or 0 unless v is 27 or 28 (plain ECDSA).
    function _ecdsaSigner(bytes32 hash, bytes calldata sig) private pure returns (address) {
        uint8 v = uint8(sig[64]);
        if (v < 27 || v > 28) return address(0); // both comparisons run for 27 and 28: gas independent of v
        return ecrecover(hash, v, bytes32(sig[0:32]), bytes32(sig[32:64]));
    }
}
