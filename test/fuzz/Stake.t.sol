// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "../../contracts/interfaces/IProviderRegistry.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @notice Stake and slashing: the lock a job takes, the slash split, and each window (unbonding, decision,
/// stall expiry, progress timeout) exactly at its boundary.
contract StakeFuzzTest is EscrowFixture {
    address private constant finder = address(0xF1D00001);

    function _fault(uint32 step) private pure returns (IJobEscrow.Fault memory) {
        return IJobEscrow.Fault(step, keccak256("in"), keccak256("committed"), keccak256("replayed"), finder);
    }

    function testFuzz_assign_locksMaxOfMinimumAndCheckpointPay(uint128 price, uint32 interval) public {
        price = uint128(bound(price, 1, 1e12));
        interval = uint32(bound(interval, 1, 1_000_000));
        uint256 jobId = _createJob(interval, interval, price);
        _registerAndAssign(jobId, provider1, price);
        uint256 pay = uint256(price) * interval;
        uint256 expected = pay < MIN_STAKE ? MIN_STAKE : pay;
        assertEq(registry.lockOf(provider1, jobId), expected, "lock");
        assertEq(registry.stakeOf(provider1).locked, expected, "locked");
    }

    function testFuzz_assign_revertsIf_freeStakeShort(uint128 deposit) public {
        deposit = uint128(bound(deposit, 1, MIN_STAKE - 1));
        uint256 jobId = _createJob(10, 10, 1);
        vm.prank(provider1);
        registry.register("p", 1, IProviderRegistry.DeviceKind.GPU, "H200", 1);
        _stake(provider1, deposit);
        vm.expectRevert(
            abi.encodeWithSelector(IJobEscrow.JobEscrowStakeShort.selector, jobId, provider1, deposit, MIN_STAKE)
        );
        _assign(jobId, provider1);
    }

    function testFuzz_refuseWithFault_splitsTheLockExactlyAndVoidsUnclaimedEarnings(
        uint128 price,
        uint32 interval
    ) public {
        price = uint128(bound(price, 1, 1e12));
        interval = uint32(bound(interval, 2, 100_000));
        uint256 jobId = _createJob(2 * interval, interval, price);
        _registerAndAssign(jobId, provider1, price);
        _reportAndAccept(jobId, interval);
        bytes32 bad = _report(jobId, 2 * interval);
        uint128 lock = registry.lockOf(provider1, jobId);
        vm.prank(verifierSafe);
        escrow.refuseWithFault(jobId, 1, 2 * interval, bad, _fault(interval + 1), "");
        uint256 toClient = (uint256(lock) * 5_000) / 10_000;
        uint256 toFinder = (uint256(lock) * 2_000) / 10_000;
        assertEq(escrow.owed(client), toClient, "client share");
        assertEq(escrow.owed(finder), toFinder, "finder share");
        assertEq(escrow.owed(FEE_RECIPIENT), lock - toClient - toFinder, "fee share");
        assertEq(escrow.earningsOf(jobId, provider1), 0, "earnings voided");
        assertEq(escrow.jobOf(jobId).paid, 0, "paid");
        assertEq(registry.lockOf(provider1, jobId), 0, "lock gone");
        assertEq(registry.stakeOf(provider1).deposited, type(uint128).max - lock, "deposit slashed");
        (uint256 held, uint256 owes) = escrow.reserves();
        assertEq(held, owes, "reserves");
    }

    function testFuzz_withdrawStake_succeedsIff_unbondingDelayPassed(uint256 wait) public {
        _register(provider1, 1);
        wait = bound(wait, 0, 2 * UNBONDING);
        vm.prank(provider1);
        registry.requestUnbond(MIN_STAKE);
        uint64 readyAt = uint64(block.timestamp) + UNBONDING;
        vm.warp(block.timestamp + wait);
        if (block.timestamp < readyAt) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IProviderRegistry.ProviderRegistryUnbondingNotReady.selector,
                    provider1,
                    readyAt,
                    block.timestamp
                )
            );
        }
        vm.prank(provider1);
        registry.withdrawStake();
        if (block.timestamp >= readyAt) assertEq(usdc.balanceOf(provider1), MIN_STAKE, "paid");
    }

    function testFuzz_decision_succeedsIff_withinDecisionTimeout(uint256 wait, bool afterUnassign) public {
        uint256 jobId = _createJob(10, 10, 1);
        _registerAndAssign(jobId, provider1, 1);
        bytes32 hash = _report(jobId, 10);
        if (afterUnassign) {
            vm.prank(COORDINATOR);
            escrow.unassign(jobId);
        }
        uint256 deadline = block.timestamp + escrow.DECISION_TIMEOUT();
        wait = bound(wait, 0, 2 * escrow.DECISION_TIMEOUT());
        vm.warp(block.timestamp + wait);
        if (block.timestamp > deadline) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IJobEscrow.JobEscrowDecisionWindowClosed.selector,
                    jobId,
                    deadline,
                    block.timestamp
                )
            );
        }
        vm.prank(verifierSafe);
        escrow.acceptCheckpoint(jobId, 1, 10, hash, "");
        if (block.timestamp <= deadline) assertEq(escrow.earningsOf(jobId, provider1), 10, "credited to reporter");
    }

    function testFuzz_expire_succeedsIff_openLongerThanStallExpiry(uint256 wait) public {
        uint256 jobId = _createJob(10, 10, 1);
        uint256 expiresAt = block.timestamp + escrow.STALL_EXPIRY();
        wait = bound(wait, 0, 2 * escrow.STALL_EXPIRY());
        vm.warp(block.timestamp + wait);
        if (block.timestamp <= expiresAt) {
            vm.expectRevert(
                abi.encodeWithSelector(IJobEscrow.JobEscrowNotExpired.selector, jobId, expiresAt, block.timestamp)
            );
        }
        vm.prank(STRANGER);
        escrow.expire(jobId);
        if (block.timestamp > expiresAt) _assertStatus(jobId, IJobEscrow.JobStatus.Cancelled);
    }

    function testFuzz_progressTimeout_isIntervalTimesStepSecondsWithinLeaseAndCap(uint32 interval) public {
        interval = uint32(bound(interval, 1, type(uint32).max));
        uint256 jobId = _createJob(interval, interval, 1);
        uint256 expected = uint256(interval) * escrow.MAX_SECONDS_PER_STEP();
        if (expected < LEASE) expected = LEASE;
        if (expected > escrow.PROGRESS_TIMEOUT()) expected = escrow.PROGRESS_TIMEOUT();
        assertEq(escrow.jobOf(jobId).progressTimeout, expected, "progress timeout");
    }
}
