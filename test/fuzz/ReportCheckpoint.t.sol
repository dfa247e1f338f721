// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @notice reportCheckpoint step boundaries: a step is accepted for report exactly when
/// acceptedStep < step <= min(acceptedStep + checkpointInterval, totalSteps), over the whole uint32 range.
contract ReportCheckpointFuzzTest is EscrowFixture {
    /// @dev A Running job with `accepted` steps already accepted (one acceptance, so accepted <= interval).
    function _jobWithAccepted(uint32 totalSteps, uint32 interval, uint32 accepted) private returns (uint256 jobId) {
        jobId = _createJob(totalSteps, interval, 1);
        _registerAndAssign(jobId, provider1, 1);
        if (accepted > 0) _reportAndAccept(jobId, accepted);
    }

    /// @dev A job shape with 0 <= accepted <= interval <= totalSteps and accepted < totalSteps. With `top`, all
    /// three lie within 1024 of the top of the uint32 range, where acceptedStep + interval exceeds uint32 (the
    /// overflow fixed in afc4c68 reverted there with a panic and left such jobs unable to finish).
    function _shape(
        uint32 totalSteps,
        uint32 interval,
        uint32 accepted,
        bool top
    ) private pure returns (uint32, uint32, uint32) {
        if (top) {
            totalSteps = type(uint32).max - (totalSteps % 1024);
            interval = totalSteps - (interval % 1024);
        } else {
            totalSteps = uint32(bound(totalSteps, 2, type(uint32).max));
            interval = uint32(bound(interval, 1, totalSteps));
        }
        uint32 cap = interval < totalSteps ? interval : totalSteps - 1;
        accepted = top ? cap - (accepted % 1024 > cap ? cap : accepted % 1024) : uint32(bound(accepted, 0, cap));
        return (totalSteps, interval, accepted);
    }

    function testFuzz_reportCheckpoint_succeedsIff_stepInRange(
        uint32 totalSteps,
        uint32 interval,
        uint32 accepted,
        uint32 step,
        uint8 pick
    ) public {
        (totalSteps, interval, accepted) = _shape(totalSteps, interval, accepted, pick >= 128);
        uint256 reach = uint256(accepted) + interval;
        uint32 maxStep = reach > totalSteps ? totalSteps : uint32(reach);
        // Half the runs land exactly on a boundary: acceptedStep, +1, the furthest allowed, one past it.
        if (pick % 8 == 0) step = accepted;
        else if (pick % 8 == 1) step = accepted + 1;
        else if (pick % 8 == 2) step = maxStep;
        else if (pick % 8 == 3 && maxStep < type(uint32).max) step = maxStep + 1;
        uint256 jobId = _jobWithAccepted(totalSteps, interval, accepted);
        bool valid = step > accepted && step <= maxStep;

        if (!valid) {
            vm.expectRevert(
                abi.encodeWithSelector(IJobEscrow.JobEscrowInvalidStep.selector, jobId, step, accepted, maxStep)
            );
        }
        vm.prank(provider1);
        escrow.reportCheckpoint(jobId, 1, step, _hash(jobId, step));

        if (valid) {
            IJobEscrow.Job memory job = escrow.jobOf(jobId);
            assertEq(job.pendingStep, step, "pendingStep");
            assertEq(job.pendingHash, _hash(jobId, step), "pendingHash");
            assertEq(job.leaseExpiresAt, block.timestamp + LEASE, "a report extends the lease");
        }
    }

    /// @dev The furthest step allowed is acceptedStep + interval, capped at totalSteps: both sides of the cap.
    function testFuzz_reportCheckpoint_capsAtTotalSteps(
        uint32 totalSteps,
        uint32 interval,
        uint32 accepted,
        bool top
    ) public {
        (totalSteps, interval, accepted) = _shape(totalSteps, interval, accepted, top);
        uint256 jobId = _jobWithAccepted(totalSteps, interval, accepted);
        uint256 reach = uint256(accepted) + interval;
        uint32 maxStep = reach > totalSteps ? totalSteps : uint32(reach);

        if (maxStep < type(uint32).max) {
            vm.expectRevert(
                abi.encodeWithSelector(IJobEscrow.JobEscrowInvalidStep.selector, jobId, maxStep + 1, accepted, maxStep)
            );
            vm.prank(provider1);
            escrow.reportCheckpoint(jobId, 1, maxStep + 1, _hash(jobId, maxStep + 1));
        }
        vm.prank(provider1);
        escrow.reportCheckpoint(jobId, 1, maxStep, _hash(jobId, maxStep));
        assertEq(escrow.jobOf(jobId).pendingStep, maxStep, "pendingStep");
    }

    function testFuzz_reportCheckpoint_revertsIf_checkpointPending(uint32 first, uint32 second) public {
        uint256 jobId = _jobWithAccepted(100, 10, 0);
        first = uint32(bound(first, 1, 10));
        _report(jobId, first);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowCheckpointPending.selector, jobId, first));
        vm.prank(provider1);
        escrow.reportCheckpoint(jobId, 1, second, _hash(jobId, second));
    }

    function testFuzz_reportCheckpoint_revertsIf_epochStale(uint64 epoch) public {
        uint256 jobId = _jobWithAccepted(100, 10, 0);
        // The provider is unassigned and reassigned: epoch 3 is current; 1 (its old assignment) and others are not.
        vm.prank(COORDINATOR);
        escrow.unassign(jobId);
        _assign(jobId, provider1);
        vm.assume(epoch != 3);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowStaleEpoch.selector, jobId, epoch, 3));
        vm.prank(provider1);
        escrow.reportCheckpoint(jobId, epoch, 5, _hash(jobId, 5));
    }

    function testFuzz_reportCheckpoint_revertsIf_callerNotAssignee(address caller) public {
        vm.assume(caller != provider1);
        uint256 jobId = _jobWithAccepted(100, 10, 0);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowNotAssignee.selector, jobId, caller, provider1));
        vm.prank(caller);
        escrow.reportCheckpoint(jobId, 1, 5, _hash(jobId, 5));
    }

    function testFuzz_reportCheckpoint_revertsIf_hashZero(uint32 step) public {
        uint256 jobId = _jobWithAccepted(100, 10, 0);
        step = uint32(bound(step, 1, 10));
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowZeroHash.selector, jobId));
        vm.prank(provider1);
        escrow.reportCheckpoint(jobId, 1, step, bytes32(0));
    }

    /// @dev Once every step is accepted there is nothing left to report.
    function testFuzz_reportCheckpoint_revertsIf_allStepsAccepted(uint32 totalSteps, uint32 step) public {
        totalSteps = uint32(bound(totalSteps, 1, type(uint32).max));
        uint256 jobId = _jobWithAccepted(totalSteps, totalSteps, totalSteps);
        vm.expectRevert(
            abi.encodeWithSelector(IJobEscrow.JobEscrowInvalidStep.selector, jobId, step, totalSteps, totalSteps)
        );
        vm.prank(provider1);
        escrow.reportCheckpoint(jobId, 1, step, _hash(jobId, step));
    }
}
