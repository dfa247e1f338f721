// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {VM, bound} from "../../fuzz/utils/Bound.sol";
import {HandlerBase, OPEN, RUNNING, DISPUTE_WINDOW} from "./HandlerBase.sol";

/// @notice The verifier Safe's calls (the handler is the Safe: direct calls, empty signatures) and forgeries.
abstract contract VerifierActions is HandlerBase {
    function acceptCheckpoint(uint256 jobSeed, uint256 stepSeed)
        external
        useCurrentTime
        instrument("acceptCheckpoint")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        bool expected = _status(g) == RUNNING && g.pending != 0;
        (uint32 step, bytes32 checkpointHash) =
            expected ? (g.pending, g.pendingHash) : (g.accepted + 1, keccak256(abi.encode(stepSeed)));
        address provider = g.assignee;
        uint256 earnedBefore = escrow.earningsOf(jobId, provider);
        (bool ok,) = _rawCall(address(this), address(escrow), _decision(jobId, g.epoch, step, checkpointHash, true, ""));
        if (ok && !expected) {
            _forgedDecisionSucceeded("acceptCheckpoint: nothing pending");
        } else if (ok) {
            uint128 amount = uint128(step - g.accepted) * g.price;
            for (uint32 s = g.accepted + 1; s <= step; ++s) {
                if (ghost_stepPaid[jobId][s]) ghost_stepsPaidTwice += 1;
                ghost_stepPaid[jobId][s] = true;
            }
            if (escrow.earningsOf(jobId, provider) != earnedBefore + amount) {
                _unexpected("acceptCheckpoint: credited amount");
            }
            g.paid += amount;
            ghost_earned[jobId][provider] += amount;
            g.accepted = step;
            g.acceptedHash = checkpointHash;
            g.pending = 0;
            g.pendingHash = bytes32(0);
            g.lease = uint64(currentTime) + LEASE;
            g.progress = uint64(currentTime);
            _succeeded("acceptCheckpoint");
        } else if (expected) {
            _unexpected("acceptCheckpoint reverted");
        }
        _record(jobId);
    }

    function refuseCheckpoint(uint256 jobSeed) external useCurrentTime instrument("refuseCheckpoint") {
        uint256 jobId = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        bool expected = _status(g) == RUNNING && g.pending != 0;
        (uint32 step, bytes32 checkpointHash) =
            expected ? (g.pending, g.pendingHash) : (g.accepted + 1, keccak256(abi.encode(jobSeed)));
        (bool ok,) = _rawCall(address(this), address(escrow), _decision(jobId, g.epoch, step, checkpointHash, false, ""));
        if (ok && !expected) {
            _forgedDecisionSucceeded("refuseCheckpoint: nothing pending");
        } else if (ok) {
            ghost_fenced[jobId][g.assignee] = true;
            _reopen(g);
            _succeeded("refuseCheckpoint");
        } else if (expected) {
            _unexpected("refuseCheckpoint reverted");
        }
        _record(jobId);
    }

    /// @dev A decision that must never pass: from someone other than the Safe with junk signatures, or from the
    /// Safe about a checkpoint that is not the pending one (old epoch, other step, other hash).
    function forgeDecision(uint256 jobSeed, uint256 modeSeed, bool accept)
        external
        useCurrentTime
        instrument("forgeDecision")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        (bool ok,) = _forgedCall(g, jobId, modeSeed, accept);
        if (ok) _forgedDecisionSucceeded("forgeDecision");
        else ghost_forgedDecisionsReverted += 1;
        _record(jobId);
    }

    function submitVerdict(uint256 jobSeed, uint256 metricSeed, bool passed, uint256 hashSeed)
        external
        useCurrentTime
        instrument("submitVerdict")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Trained);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        bytes32 modelHash = hashSeed % 5 == 0 ? keccak256(abi.encode(hashSeed)) : g.acceptedHash;
        IJobEscrow.JobStatus status = _status(g);
        bool expected = (status == OPEN || status == RUNNING) && g.accepted == g.totalSteps
            && modelHash == g.acceptedHash;
        bytes memory data =
            abi.encodeCall(escrow.submitVerdict, (jobId, modelHash, bound(metricSeed, 0, 10_000), passed, ""));
        if (_call(address(this), address(escrow), data, expected, "submitVerdict")) {
            g.phase = DISPUTE_WINDOW;
            g.epoch += 1;
            g.verdictAt = uint64(currentTime);
            _succeeded("submitVerdict");
        }
        _record(jobId);
    }

    /// @dev Mode 0: junk signatures from someone other than the Safe; 1: another epoch; 2: another step; 3: another
    /// hash.
    function _forgedCall(GhostJob storage g, uint256 jobId, uint256 modeSeed, bool accept)
        internal
        returns (bool ok, bytes memory result)
    {
        uint64 epoch = g.epoch;
        uint32 step = g.pending == 0 ? g.accepted + 1 : g.pending;
        bytes32 checkpointHash = g.pendingHash;
        bytes memory signatures;
        address caller = address(this);
        if (modeSeed % 4 == 0) {
            signatures = abi.encodePacked(keccak256(abi.encode(modeSeed)), bytes32(modeSeed), uint8(27));
            caller = _actor(modeSeed / 4);
        } else if (modeSeed % 4 == 1) {
            epoch = epoch == 0 || modeSeed % 8 == 1 ? epoch + 1 : epoch - 1;
        } else if (modeSeed % 4 == 2) {
            step = step == g.pending ? step + 1 : step;
        } else {
            checkpointHash = keccak256(abi.encode(checkpointHash));
        }
        return _rawCall(caller, address(escrow), _decision(jobId, epoch, step, checkpointHash, accept, signatures));
    }

    function _decision(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bool accept,
        bytes memory signatures
    ) internal view returns (bytes memory) {
        return accept
            ? abi.encodeCall(escrow.acceptCheckpoint, (jobId, epoch, step, checkpointHash, signatures))
            : abi.encodeCall(escrow.refuseCheckpoint, (jobId, epoch, step, checkpointHash, signatures));
    }
}
