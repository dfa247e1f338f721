// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {HandlerBase, OPEN, RUNNING} from "./HandlerBase.sol";
import {bound} from "../../fuzz/utils/Bound.sol";

/// @notice The coordinator's calls (and anyone's unassign once a lease lapsed).
abstract contract CoordinatorActions is HandlerBase {
    function assign(uint256 jobSeed, uint256 providerSeed) external action("assign") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Assignable);
        if (jobId == 0) return;
        address provider = _pickProvider(jobId, providerSeed);
        bool expected = _status(g) == OPEN && _eligible(jobId, provider);
        string memory what = ghost_fenced[jobId][provider] ? "assign (fenced provider)" : "assign";
        bytes memory data = abi.encodeCall(escrow.assign, (jobId, provider));
        if (_call(COORDINATOR, address(escrow), data, expected, what)) {
            _dropLapsed(jobId, g);
            uint128 extra = _stakeNeeded(jobId, provider, ghost_providers[provider].price);
            ghost_lock[jobId][provider] += extra;
            _ghostStakes[provider].locked += extra;
            g.phase = RUNNING;
            g.epoch += 1;
            g.assignee = provider;
            g.price = ghost_providers[provider].price;
            g.lease = uint64(currentTime) + LEASE;
            g.progress = uint64(currentTime);
            _succeeded("assign");
        }
        _record(jobId);
    }

    /// @dev The owner sets the template's step bound (now and then out of range: refused). Jobs created from now on
    /// take it, so progress timeouts (and which stalls forfeit) vary from job to job; existing jobs keep theirs.
    function setStepBound(uint256 millisSeed) external action("setStepBound") {
        uint16 millis = uint16(bound(millisSeed, 0, 31_000));
        bool expected = millis >= 1 && millis <= MAX_SECONDS_PER_STEP * 1000;
        bytes memory data = abi.encodeCall(escrow.setTemplateStepBound, (TEMPLATE, millis));
        if (_call(OWNER, address(escrow), data, expected, "setStepBound")) {
            ghost_stepMillis = millis;
            _succeeded("setStepBound");
        }
    }

    /// @dev The coordinator (one time in four) may unassign at any time; anyone else only once the lease lapsed.
    function unassign(uint256 jobSeed, uint256 callerSeed) external action("unassign") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Running);
        if (jobId == 0) return;
        address caller = callerSeed % 4 == 0 ? COORDINATOR : _actor(callerSeed / 4);
        bool expected = _status(g) == RUNNING && (caller == COORDINATOR || currentTime > g.lease);
        if (_call(caller, address(escrow), abi.encodeCall(escrow.unassign, (jobId)), expected, "unassign")) {
            address holder = g.assignee;
            // The coordinator forfeits a newcomer's lock only past the job's progress timeout (lapsed: always), and
            // only on jobs whose timeout is not capped (interval × step bound within PROGRESS_TIMEOUT).
            bool stalled = (caller != COORDINATOR || currentTime > _stalledAfter(g)) && !_timeoutCapped(g);
            _reopen(g);
            _dropLapsed(jobId, g);
            if (stalled) _endHold(jobId, g, holder);
            else _releaseIfIdle(jobId, g, holder);
            _succeeded(caller == COORDINATOR ? bytes32("unassign:coordinator") : bytes32("unassign:lapsed"));
        }
        _record(jobId);
    }
}
