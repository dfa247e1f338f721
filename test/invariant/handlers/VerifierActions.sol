// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {VM, bound} from "../../fuzz/utils/Bound.sol";
import {HandlerBase, RUNNING, DISPUTE_WINDOW} from "./HandlerBase.sol";

/// @notice The verifier Safe's calls (the handler is the Safe: direct calls, empty signatures) and forgeries.
abstract contract VerifierActions is HandlerBase {
    function acceptCheckpoint(uint256 jobSeed, uint256 stepSeed) external action("acceptCheckpoint") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        address reporter = g.pendingProvider;
        uint256 earnedBefore = escrow.earningsOf(jobId, reporter);
        (bool ok, uint32 step, bytes32 checkpointHash) = _safeDecision(jobId, g, stepSeed, true);
        if (ok) {
            // Credited to its reporter at the reporter's price, whoever holds the job now.
            uint128 amount = uint128(step - g.accepted) * g.pendingPrice;
            for (uint32 s = g.accepted + 1; s <= step; ++s) {
                if (ghost_stepPaid[jobId][s]) ghost_stepsPaidTwice += 1;
                ghost_stepPaid[jobId][s] = true;
            }
            if (escrow.earningsOf(jobId, reporter) != earnedBefore + amount) {
                _unexpected("acceptCheckpoint: credited amount");
            }
            g.paid += amount;
            ghost_earned[jobId][reporter] += amount;
            g.accepted = step;
            g.acceptedHash = checkpointHash;
            _clearPending(g);
            g.stallSince = uint64(currentTime);
            if (g.phase == RUNNING) {
                g.lease = uint64(currentTime) + LEASE;
                g.progress = uint64(currentTime);
            }
            ghost_proven[reporter] = true;
            _releaseIfIdle(jobId, g, reporter);
            _succeeded(g.assignee == reporter ? bytes32("acceptCheckpoint") : bytes32("acceptCheckpoint:orphan"));
        }
        _record(jobId);
    }

    function refuseCheckpoint(uint256 jobSeed) external action("refuseCheckpoint") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        (bool ok, , ) = _safeDecision(jobId, g, jobSeed, false);
        if (ok) {
            address reporter = _refuse(g, jobId);
            _endHold(jobId, g, reporter);
            _succeeded("refuseCheckpoint");
        }
        _record(jobId);
    }

    /// @dev The Safe decides the pending checkpoint; where nothing is decidable it names the next step with a hash
    /// made from `hashSeed`, which must fail. `ok`: a decision the model expected went through.
    function _safeDecision(
        uint256 jobId,
        GhostJob storage g,
        uint256 hashSeed,
        bool accept
    ) private returns (bool ok, uint32 step, bytes32 checkpointHash) {
        bool expected = _decidable(g);
        (step, checkpointHash) = expected
            ? (g.pending, g.pendingHash)
            : (g.accepted + 1, keccak256(abi.encode(hashSeed)));
        bytes memory data = _decision(jobId, g.pendingEpoch, step, checkpointHash, accept, "");
        (ok, ) = _rawCall(address(this), address(escrow), data);
        string memory what = accept ? "acceptCheckpoint" : "refuseCheckpoint";
        if (ok && !expected) _forgedDecisionSucceeded(string.concat(what, ": nothing decidable"));
        else if (!ok && expected) _unexpected(string.concat(what, " reverted"));
        ok = ok && expected;
    }

    /// @dev The Safe proves a fault in a fabricated checkpoint: the reporter's lock is slashed (50 % client, 20 %
    /// finder, rest fee recipient) and its unclaimed earnings on the job are voided. About an honest checkpoint
    /// the Safe signs no fault: only a forger tries (someone else, junk signatures), and must fail.
    function refuseWithFault(uint256 jobSeed, uint256 stepSeed, uint256 finderSeed) external action("refuseWithFault") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Fabricated);
        if (jobId == 0) return;
        bool honest = !g.pendingFabricated;
        bool expected = _decidable(g) && !honest;
        address reporter = g.pendingProvider;
        address finder = _verifiers[finderSeed % N_VERIFIERS];
        uint256[3] memory before = [escrow.owed(g.client), escrow.owed(finder), escrow.owed(FEE_RECIPIENT)];
        (bool ok, ) = _faultCall(g, jobId, stepSeed, finder, honest);
        if (ok && honest) ghost_honestSlashed += 1;
        if (ok != expected) {
            _unexpected(ok ? "refuseWithFault succeeded" : "refuseWithFault reverted");
        } else if (ok) {
            _refuse(g, jobId);
            _slash(g, jobId, reporter, finder, before);
            _succeeded("refuseWithFault");
        }
        _record(jobId);
    }

    function _faultCall(
        GhostJob storage g,
        uint256 jobId,
        uint256 stepSeed,
        address finder,
        bool forged
    ) internal returns (bool ok, bytes memory result) {
        bytes memory signatures =
            forged ? abi.encodePacked(bytes32(stepSeed), bytes32(stepSeed), uint8(28)) : bytes("");
        bytes memory data = abi.encodeCall(
            escrow.refuseWithFault,
            (jobId, g.pendingEpoch, _pendingOrNext(g), g.pendingHash, _fault(g, stepSeed, finder), signatures)
        );
        return _rawCall(forged ? _actor(stepSeed) : address(this), address(escrow), data);
    }

    function _pendingOrNext(GhostJob storage g) internal view returns (uint32) {
        return g.pending == 0 ? g.accepted + 1 : g.pending;
    }

    /// @dev A replay mismatch at a step inside the pending checkpoint's segment.
    function _fault(
        GhostJob storage g,
        uint256 stepSeed,
        address finder
    ) internal view returns (IJobEscrow.Fault memory) {
        return
            IJobEscrow.Fault({
                step: uint32(bound(stepSeed, g.accepted + 1, _pendingOrNext(g))),
                inputHash: keccak256(abi.encode("in", stepSeed)),
                committedHash: keccak256(abi.encode("committed", stepSeed)),
                replayedHash: keccak256(abi.encode("replayed", stepSeed)),
                finder: finder
            });
    }

    /// @dev The model of a refusal: the reporter is fenced, the checkpoint dropped, the job reopened if the
    /// reporter holds it. Returns the reporter.
    function _refuse(GhostJob storage g, uint256 jobId) internal returns (address reporter) {
        reporter = g.pendingProvider;
        ghost_fenced[jobId][reporter] = true;
        _clearPending(g);
        if (g.phase != RUNNING) return reporter;
        // The holder was waiting for this decision: its progress clock restarts (as on an acceptance).
        if (g.assignee == reporter) _reopen(g);
        else g.progress = uint64(currentTime);
    }

    function _slash(
        GhostJob storage g,
        uint256 jobId,
        address reporter,
        address finder,
        uint256[3] memory before
    ) internal {
        uint128 slashed = ghost_lock[jobId][reporter];
        uint128 voided = uint128(ghost_earned[jobId][reporter] - ghost_claimed[jobId][reporter]);
        ghost_earned[jobId][reporter] -= voided;
        g.paid -= voided;
        uint128 toClient = slashed / 2;
        uint128 toFinder = slashed / 5;
        _credit(g.client, before[0], toClient, "refuseWithFault: client share");
        _credit(finder, before[1], toFinder, "refuseWithFault: finder share");
        _credit(FEE_RECIPIENT, before[2], slashed - toClient - toFinder, "refuseWithFault: fee share");
        GhostStake storage st = _ghostStakes[reporter];
        st.deposited -= slashed;
        st.locked -= slashed;
        ghost_lock[jobId][reporter] = 0;
        ghost_stakeSlashed += slashed;
        ghost_slashes[jobId][reporter] += 1;
    }

    /// @dev A decision that must never pass: from someone other than the Safe with junk signatures, or from the
    /// Safe about a checkpoint that is not the pending one (old epoch, other step, other hash).
    function forgeDecision(uint256 jobSeed, uint256 modeSeed, bool accept) external action("forgeDecision") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        (bool ok, ) = _forgedCall(g, jobId, modeSeed, accept);
        if (ok) _forgedDecisionSucceeded("forgeDecision");
        else ghost_forgedDecisionsReverted += 1;
        _record(jobId);
    }

    function submitVerdict(
        uint256 jobSeed,
        uint256 metricSeed,
        bool passed,
        uint256 hashSeed
    ) external action("submitVerdict") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Trained);
        if (jobId == 0) return;
        bytes32 modelHash = hashSeed % 5 == 0 ? keccak256(abi.encode(hashSeed)) : g.acceptedHash;
        bool expected = _fits(jobId, Fit.Trained) && modelHash == g.acceptedHash;
        bytes memory data = abi.encodeCall(
            escrow.submitVerdict,
            (jobId, modelHash, bound(metricSeed, 0, 10_000), passed, "")
        );
        if (_call(address(this), address(escrow), data, expected, "submitVerdict")) {
            g.phase = DISPUTE_WINDOW;
            g.epoch += 1;
            g.verdictAt = uint64(currentTime);
            _releaseIfIdle(jobId, g, g.assignee);
            _succeeded("submitVerdict");
        }
        _record(jobId);
    }

    /// @dev Mode 0: junk signatures from someone other than the Safe; 1: another epoch; 2: another step; 3: another
    /// hash.
    function _forgedCall(
        GhostJob storage g,
        uint256 jobId,
        uint256 modeSeed,
        bool accept
    ) internal returns (bool ok, bytes memory result) {
        uint64 epoch = g.pendingEpoch;
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
        bytes memory data = _decision(jobId, epoch, step, checkpointHash, accept, signatures);
        // One refusal in two is a fault refusal (it would slash): forged, it must fail like the others.
        if (!accept && modeSeed % 16 >= 8) {
            IJobEscrow.Fault memory fault = IJobEscrow.Fault(
                step,
                bytes32(modeSeed),
                keccak256("a"),
                keccak256("b"),
                _verifiers[0]
            );
            data = abi.encodeCall(escrow.refuseWithFault, (jobId, epoch, step, checkpointHash, fault, signatures));
        }
        return _rawCall(caller, address(escrow), data);
    }

    function _decision(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bool accept,
        bytes memory signatures
    ) internal view returns (bytes memory) {
        return
            accept
                ? abi.encodeCall(escrow.acceptCheckpoint, (jobId, epoch, step, checkpointHash, signatures))
                : abi.encodeCall(escrow.refuseCheckpoint, (jobId, epoch, step, checkpointHash, signatures));
    }
}
