// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {bound} from "../../fuzz/utils/Bound.sol";
import {HandlerBase, OPEN, DISPUTE_WINDOW, DISPUTED, CANCELLED} from "./HandlerBase.sol";

/// @notice The client's calls: create, cancel, dispute.
abstract contract ClientActions is HandlerBase {
    function createJob(
        uint256 clientSeed,
        uint256 stepsSeed,
        uint256 intervalSeed,
        uint256 priceSeed,
        uint256 budgetSeed,
        uint256 windowSeed
    ) external action("createJob") {
        if (ghost_jobCount >= maxJobs) return;
        address client = _clients[clientSeed % N_CLIENTS];
        uint32 totalSteps = uint32(bound(stepsSeed, 1, 10));
        uint32 interval = uint32(bound(intervalSeed, (totalSteps + 2) / 3, totalSteps));
        uint128 maxPrice = uint128(bound(priceSeed, 1, 1000));
        uint256 fullPrice = uint256(totalSteps) * maxPrice;
        uint128 budget = uint128(bound(budgetSeed, (fullPrice + 1) / 2, 2 * fullPrice));
        uint64 window = uint64(bound(windowSeed, 1 minutes, 3 days));
        _createJob(client, IJobEscrow.JobRequest(TEMPLATE, totalSteps, interval, maxPrice, budget, window));
    }

    function cancel(uint256 jobSeed, uint256 callerSeed) external action("cancel") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Stuck);
        if (jobId == 0) return;
        address caller = _clientOrOther(g, callerSeed);
        bool expected = _status(g) == OPEN && caller == g.client && !_pendingLive(g);
        uint256 owedBefore = escrow.owed(g.client);
        if (_call(caller, address(escrow), abi.encodeCall(escrow.cancel, (jobId)), expected, "cancel")) {
            // A lapsed report dropped here may forfeit its (probationary) reporter's lock to the client first.
            uint256 forfeited = ghost_stakeForfeited;
            _dropLapsed(jobId, g);
            owedBefore += ghost_stakeForfeited - forfeited;
            g.phase = CANCELLED;
            _credit(g.client, owedBefore, g.budget - g.paid, "cancel: refund");
            _succeeded("cancel");
        }
        _record(jobId);
    }

    function dispute(uint256 jobSeed, uint256 callerSeed) external action("dispute") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.InDisputeWindow);
        if (jobId == 0) return;
        address caller = _clientOrOther(g, callerSeed);
        bool expected = _status(g) == DISPUTE_WINDOW && caller == g.client;
        usdc.mint(caller, BOND);
        uint256 held = usdc.balanceOf(address(escrow));
        if (_call(caller, address(escrow), abi.encodeCall(escrow.dispute, (jobId)), expected, "dispute")) {
            if (usdc.balanceOf(address(escrow)) != held + BOND) _unexpected("dispute: bond not pulled");
            g.phase = DISPUTED;
            g.disputedAt = uint64(currentTime);
            ghost_bondsPosted[jobId] += 1;
            ghost_bondsDeposited += BOND;
            _succeeded("dispute");
        }
        _record(jobId);
    }

    /// @dev The job's client four times in five; otherwise some client (maybe another one).
    function _clientOrOther(GhostJob storage g, uint256 seed) internal view returns (address) {
        return seed % 5 == 0 ? _clients[(seed / 5) % N_CLIENTS] : g.client;
    }

    function _createJob(address client, IJobEscrow.JobRequest memory request) internal {
        usdc.mint(client, request.budget);
        (bool ok, bytes memory result) = _rawCall(client, address(escrow), abi.encodeCall(escrow.createJob, (request)));
        if (!ok) {
            _unexpected("createJob reverted");
            return;
        }
        uint256 jobId = abi.decode(result, (uint256));
        if (jobId != ghost_jobCount + 1) _unexpected("createJob: job ids are not sequential");
        ghost_jobCount = jobId;
        ghost_budgetsDeposited += request.budget;
        GhostJob storage g = _ghostJobs[jobId];
        g.client = client;
        g.totalSteps = request.totalSteps;
        g.interval = request.checkpointInterval;
        g.maxPrice = request.maxPricePerStep;
        g.budget = request.budget;
        g.disputeWindow = request.disputeWindow;
        g.phase = OPEN;
        g.stepMillis = _currentStepMillis();
        g.progressTimeout = _progressTimeout(request.checkpointInterval, g.stepMillis);
        g.stallSince = uint64(currentTime);
        _record(jobId);
    }
}
