// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {VM, bound} from "../../fuzz/utils/Bound.sol";
import {
    HandlerBase,
    OPEN,
    RUNNING,
    DISPUTE_WINDOW,
    SETTLEABLE,
    DISPUTED,
    ARBITER_TIMED_OUT,
    SETTLED,
    CANCELLED
} from "./HandlerBase.sol";

/// @notice The end of a job and the money: the arbiter, settlement, claims, withdrawals, time and donations.
abstract contract SettlementActions is HandlerBase {
    function resolveDispute(uint256 jobSeed, bool upheld, uint256 callerSeed) external action("resolveDispute") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Disputed);
        if (jobId == 0) return;
        address caller = callerSeed % 6 == 0 ? _actor(callerSeed / 6) : ARBITER;
        bool expected = _status(g) == DISPUTED && caller == ARBITER;
        uint256 clientBefore = escrow.owed(g.client);
        uint256 feeBefore = escrow.owed(FEE_RECIPIENT);
        bytes memory data = abi.encodeCall(escrow.resolveDispute, (jobId, upheld));
        if (_call(caller, address(escrow), data, expected, "resolveDispute")) {
            g.phase = SETTLED;
            if (upheld) {
                g.upheld = true;
                ghost_bondsReturned[jobId] += 1;
                _credit(g.client, clientBefore, g.budget + BOND, "resolveDispute(upheld): budget and bond");
                _credit(FEE_RECIPIENT, feeBefore, 0, "resolveDispute(upheld): fee recipient");
            } else {
                ghost_bondsForfeited[jobId] += 1;
                _credit(g.client, clientBefore, g.budget - g.paid, "resolveDispute(rejected): refund");
                _credit(FEE_RECIPIENT, feeBefore, BOND, "resolveDispute(rejected): bond");
            }
            _succeeded(upheld ? bytes32("resolveDispute:upheld") : bytes32("resolveDispute:rejected"));
        }
        _record(jobId);
    }

    function settle(uint256 jobSeed, uint256 callerSeed) external action("settle") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Settleable);
        if (jobId == 0) return;
        IJobEscrow.JobStatus status = _status(g);
        bool expected = status == SETTLEABLE || status == ARBITER_TIMED_OUT;
        uint256 clientBefore = escrow.owed(g.client);
        if (_call(_actor(callerSeed), address(escrow), abi.encodeCall(escrow.settle, (jobId)), expected, "settle")) {
            g.phase = SETTLED;
            uint256 bondReturned = 0;
            if (status == ARBITER_TIMED_OUT) {
                ghost_bondsReturned[jobId] += 1;
                bondReturned = BOND;
            }
            _credit(g.client, clientBefore, g.budget - g.paid + bondReturned, "settle: refund and bond");
            _succeeded(status == SETTLEABLE ? bytes32("settle:window") : bytes32("settle:arbiterTimeout"));
        }
        _record(jobId);
    }

    /// @dev Anyone expires an Open job with no acceptance (nor creation) for longer than STALL_EXPIRY: refund to
    /// the client, and accepted earnings become claimable.
    function expire(uint256 jobSeed, uint256 callerSeed) external action("expire") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Expirable);
        if (jobId == 0) return;
        bool expected = _status(g) == OPEN && currentTime > uint256(g.stallSince) + STALL_EXPIRY && !_pendingLive(g);
        uint256 owedBefore = escrow.owed(g.client);
        if (_call(_actor(callerSeed), address(escrow), abi.encodeCall(escrow.expire, (jobId)), expected, "expire")) {
            // A lapsed report dropped here may forfeit its (probationary) reporter's lock to the client first.
            uint256 forfeited = ghost_stakeForfeited;
            _dropLapsed(jobId, g);
            owedBefore += ghost_stakeForfeited - forfeited;
            g.phase = CANCELLED;
            _credit(g.client, owedBefore, g.budget - g.paid, "expire: refund");
            _succeeded("expire");
        }
        _record(jobId);
    }

    function claimEarnings(uint256 jobSeed, uint256 providerSeed, uint256 callerSeed) external action("claimEarnings") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Claimable);
        if (jobId == 0) return;
        address provider = _providers[(providerSeed / 8) % N_PROVIDERS];
        for (uint256 i = 0; i < N_PROVIDERS && providerSeed % 8 != 7; ++i) {
            address candidate = _providers[(providerSeed / 8 + i) % N_PROVIDERS];
            if (ghost_earned[jobId][candidate] > ghost_claimed[jobId][candidate]) {
                provider = candidate;
                break;
            }
        }
        IJobEscrow.JobStatus status = _status(g);
        uint256 unclaimed = ghost_earned[jobId][provider] - ghost_claimed[jobId][provider];
        bool expected = (status == SETTLED || status == CANCELLED) && !g.upheld && unclaimed > 0;
        uint256 owedBefore = escrow.owed(provider);
        bytes memory data = abi.encodeCall(escrow.claimEarnings, (jobId, provider));
        if (_call(_actor(callerSeed), address(escrow), data, expected, "claimEarnings")) {
            ghost_claimed[jobId][provider] += unclaimed;
            _credit(provider, owedBefore, unclaimed, "claimEarnings: amount");
            _succeeded("claimEarnings");
        }
    }

    function withdraw(uint256 actorSeed) external action("withdraw") {
        address account = _actor(actorSeed / 8);
        for (uint256 i = 0; i < N_ACTORS && actorSeed % 8 != 7; ++i) {
            address candidate = _actor(actorSeed / 8 + i);
            if (ghost_owed[candidate] > 0) {
                account = candidate;
                break;
            }
        }
        uint256 amount = ghost_owed[account];
        uint256 balanceBefore = usdc.balanceOf(account);
        if (_call(account, address(escrow), abi.encodeCall(escrow.withdraw, ()), amount > 0, "withdraw")) {
            if (usdc.balanceOf(account) != balanceBefore + amount) _unexpected("withdraw: amount paid");
            if (escrow.owed(account) != 0) _unexpected("withdraw: owed left");
            ghost_owed[account] = 0;
            ghost_withdrawn += amount;
            _succeeded("withdraw");
        }
    }

    /// @dev Moves the clock. One time in four by 1 hour to 8 days (leases lapse, decision windows close, dispute
    /// windows of up to three days, the three-day arbiter timeout, the two-day unbonding and the seven-day stall
    /// expiry pass); one time in four exactly onto a job's next deadline or one second past it (lease expiry or
    /// progress timeout, decision window, stall expiry, end of the dispute window, arbiter deadline: all
    /// inclusive but the expiry); otherwise by up to 45 minutes, under the one-hour lease. Time-derived statuses
    /// of every job are re-checked.
    function warp(uint256 secondsSeed) external instrument("warp") {
        uint256 mode = secondsSeed % 4;
        uint256 target = currentTime + bound(secondsSeed / 4, 1, 45 minutes);
        if (mode == 0) {
            target = currentTime + bound(secondsSeed / 4, 1 hours, 8 days);
        } else if (mode == 1) {
            uint256 deadline = _nextDeadline(secondsSeed / 8);
            if (deadline != 0) target = deadline + ((secondsSeed / 4) % 2);
        }
        if (target > currentTime) currentTime = target;
        VM.warp(currentTime);
        for (uint256 jobId = 1; jobId <= ghost_jobCount; ++jobId) {
            _record(jobId);
        }
    }

    /// @dev Someone sends test USDC straight to the escrow. The escrow owes it to no one: held > owes afterwards.
    function donate(uint256 amountSeed) external action("donate") {
        uint256 amount = bound(amountSeed, 1, 1e6);
        usdc.mint(STRANGER, amount);
        VM.prank(STRANGER);
        usdc.transfer(address(escrow), amount);
        ghost_donated += amount;
    }

    /// @dev The first deadline still ahead (or now) among the jobs, scanning from a random one; 0 if none.
    function _nextDeadline(uint256 seed) internal view returns (uint256) {
        uint256 n = ghost_jobCount;
        for (uint256 i = 0; i < n; ++i) {
            GhostJob storage g = _ghostJobs[((seed + i) % n) + 1];
            uint256 deadline;
            if (_pendingLive(g)) {
                deadline = uint256(g.reportedAt) + DECISION_TIMEOUT;
            } else if (g.phase == RUNNING) {
                deadline = g.lease;
                uint256 stall = _stalledAfter(g);
                if (stall < deadline) deadline = stall;
            } else if (g.phase == OPEN) {
                deadline = uint256(g.stallSince) + STALL_EXPIRY;
            } else if (g.phase == DISPUTE_WINDOW) {
                deadline = uint256(g.verdictAt) + g.disputeWindow;
            } else if (g.phase == DISPUTED) {
                deadline = uint256(g.disputedAt) + ARBITER_TIMEOUT;
            }
            if (deadline >= currentTime) return deadline;
        }
        return 0;
    }
}
