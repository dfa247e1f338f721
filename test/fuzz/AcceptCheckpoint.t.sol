// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @notice acceptCheckpoint credits exactly (step - acceptedStep) * pricePerStep to the assignee; only the Safe
/// (or its owners' signatures) may decide, and only on the pending checkpoint.
contract AcceptCheckpointFuzzTest is EscrowFixture {
    function testFuzz_acceptCheckpoint_creditsExactlyStepsTimesPrice(
        uint32 totalSteps,
        uint32 first,
        uint32 second,
        uint128 price
    ) public {
        (totalSteps, price) = _anyStepsAndPrice(totalSteps, price, 2);
        first = uint32(bound(first, 1, totalSteps - 1));
        second = uint32(bound(second, first + 1, totalSteps));
        uint256 jobId = _createJob(totalSteps, totalSteps, price);
        _registerAndAssign(jobId, provider1, price);

        _reportAndAccept(jobId, first);
        assertEq(escrow.earningsOf(jobId, provider1), uint256(first) * price, "first credit");
        _reportAndAccept(jobId, second);

        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        assertEq(escrow.earningsOf(jobId, provider1), uint256(second) * price, "credited");
        assertEq(job.paid, uint256(second) * price, "paid");
        assertEq(job.acceptedStep, second, "acceptedStep");
        assertEq(job.acceptedHash, _hash(jobId, second), "acceptedHash");
        assertEq(job.pendingStep, 0, "pending cleared");
        assertLte(job.paid, job.budget, "paid <= budget");
        assertEq(escrow.totalLocked(), job.budget, "credits stay locked until settlement");
    }

    /// @dev Across providers at different prices each is credited for its own steps at its own price, and the sum
    /// never exceeds the budget.
    function testFuzz_acceptCheckpoint_creditsEachAssigneeAtItsPrice(Handover memory h) public {
        h = _bounded(h, 1e18);
        uint128 maxPrice = _higherPrice(h);
        uint256 jobId = _createJob(h.totalSteps, h.totalSteps, maxPrice);
        _handOver(jobId, h);

        (uint256 earned1, uint256 earned2) = _earned(h);
        assertEq(escrow.earningsOf(jobId, provider1), earned1, "provider1");
        assertEq(escrow.earningsOf(jobId, provider2), earned2, "provider2");
        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        assertEq(job.paid, earned1 + earned2, "paid");
        assertLte(job.paid, job.budget, "paid <= budget");
    }

    function testFuzz_acceptCheckpoint_revertsIf_notThePendingCheckpoint(
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash
    ) public {
        uint256 jobId = _createJob(100, 10, 1);
        _registerAndAssign(jobId, provider1, 1);
        bytes32 pendingHash = _report(jobId, 7);
        vm.assume(epoch != 1 || step != 7 || checkpointHash != pendingHash);
        vm.expectRevert(
            abi.encodeWithSelector(
                IJobEscrow.JobEscrowNoSuchPendingCheckpoint.selector,
                jobId,
                epoch,
                step,
                checkpointHash
            )
        );
        vm.prank(verifierSafe);
        escrow.acceptCheckpoint(jobId, epoch, step, checkpointHash, "");
    }

    function testFuzz_acceptCheckpoint_revertsIf_notTheSafe(
        address caller,
        bytes memory signatures,
        bool accept
    ) public {
        vm.assume(caller != verifierSafe);
        uint256 jobId = _createJob(100, 10, 1);
        _registerAndAssign(jobId, provider1, 1);
        bytes32 checkpointHash = _report(jobId, 7);
        bytes32 digest = escrow.checkpointDecisionDigest(jobId, 1, 7, checkpointHash, accept);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowInvalidVerifierSignatures.selector, digest));
        vm.prank(caller);
        if (accept) escrow.acceptCheckpoint(jobId, 1, 7, checkpointHash, signatures);
        else escrow.refuseCheckpoint(jobId, 1, 7, checkpointHash, signatures);
    }

    /// @dev A refusal fences the assignee, discards the pending checkpoint and keeps earlier credits.
    function testFuzz_refuseCheckpoint_keepsAcceptedWorkAndFencesTheAssignee(uint32 accepted, uint32 refused) public {
        accepted = uint32(bound(accepted, 1, 9));
        refused = uint32(bound(refused, accepted + 1, accepted + 10));
        uint256 jobId = _createJob(100, 10, 3);
        _registerAndAssign(jobId, provider1, 3);
        _reportAndAccept(jobId, accepted);
        bytes32 checkpointHash = _report(jobId, refused);

        vm.prank(verifierSafe);
        escrow.refuseCheckpoint(jobId, 1, refused, checkpointHash, "");

        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        assertEq(job.acceptedStep, accepted, "acceptedStep");
        assertEq(job.pendingStep, 0, "pending discarded");
        assertEq(job.provider, address(0), "unassigned");
        assertEq(job.epoch, 2, "epoch bumped");
        assertEq(escrow.earningsOf(jobId, provider1), uint256(accepted) * 3, "earlier credit kept");
        assertTrue(escrow.isFenced(jobId, provider1), "fenced");
        _assertStatus(jobId, IJobEscrow.JobStatus.Open);
    }
}
