// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @dev The current names of the state snapshot cheatcodes (PRBTest's Vm.sol only has the deprecated ones).
interface VmStateSnapshots {
    function snapshotState() external returns (uint256 snapshotId);
    function revertToState(uint256 snapshotId) external returns (bool success);
}

/// @notice Every deadline is inclusive, and at any instant exactly one of the two competing actions succeeds:
/// lease (assignee writes vs anyone unassigns), dispute window (client disputes vs anyone settles), arbiter
/// deadline (arbiter resolves vs anyone settles with the verdict standing). Both actions are tried from the same
/// state (snapshot / revert) at a random instant around the deadline.
contract TimeWindowsFuzzTest is EscrowFixture {
    /// @dev A random instant in [from, deadline + span], half the time within one second of the deadline.
    function _instantAround(uint256 seed, uint256 from, uint256 deadline, uint256 span) private pure returns (uint256) {
        if (seed % 2 == 0) return bound(seed / 2, deadline - 1, deadline + 1);
        return bound(seed / 2, from, deadline + span);
    }

    /// @dev Warps to a random instant around the deadline `span` from now (see `_instantAround`; up to 2 × span past
    /// it). Returns the instant and whether it is within the deadline (inclusive).
    function _warpAround(uint256 seed, uint256 span) private returns (uint256 t, bool inTime) {
        uint256 deadline = block.timestamp + span;
        t = _instantAround(seed, block.timestamp, deadline, 2 * span);
        vm.warp(t);
        inTime = t <= deadline;
    }

    function _call(address caller, bytes memory data) private returns (bool success, bytes memory returned) {
        vm.prank(caller);
        (success, returned) = address(escrow).call(data);
    }

    function testFuzz_lease_exactlyOneOf_assigneeWriteOrLapsedUnassign(uint256 seed, bool report) public {
        uint256 jobId = _createJob(100, 10, 1);
        _registerAndAssign(jobId, provider1, 1);
        uint64 lease = escrow.jobOf(jobId).leaseExpiresAt;
        assertEq(lease, START + LEASE, "lease");
        (uint256 t, bool live) = _warpAround(seed, LEASE);

        uint256 snapshot = VmStateSnapshots(address(vm)).snapshotState();
        (bool wrote, bytes memory writeError) = _call(
            provider1,
            report
                ? abi.encodeCall(escrow.reportCheckpoint, (jobId, 1, 5, _hash(jobId, 5)))
                : abi.encodeCall(escrow.heartbeat, (jobId, 1))
        );
        if (wrote) assertEq(escrow.jobOf(jobId).leaseExpiresAt, t + LEASE, "extended from now");
        VmStateSnapshots(address(vm)).revertToState(snapshot);
        (bool unassigned, bytes memory unassignError) = _call(STRANGER, abi.encodeCall(escrow.unassign, (jobId)));

        assertTrue(wrote != unassigned, "exactly one succeeds");
        assertEq(wrote, live, "the assignee writes iff now <= leaseExpiresAt");
        if (live) {
            assertEq(
                unassignError,
                abi.encodeWithSelector(IJobEscrow.JobEscrowLeaseActive.selector, jobId, lease, t),
                "LeaseActive"
            );
        } else {
            assertEq(
                writeError,
                abi.encodeWithSelector(IJobEscrow.JobEscrowLeaseLapsed.selector, jobId, lease, t),
                "LeaseLapsed"
            );
            _assertStatus(jobId, IJobEscrow.JobStatus.Open);
            assertEq(escrow.jobOf(jobId).epoch, 2, "the lapsed assignee is fenced by the epoch");
        }
    }

    /// @dev The coordinator may unassign at any instant, lapsed or not.
    function testFuzz_unassign_byCoordinator_succeedsAtAnyInstant(uint256 seed) public {
        uint256 jobId = _createJob(100, 10, 1);
        _registerAndAssign(jobId, provider1, 1);
        vm.warp(_instantAround(seed, START, START + LEASE, 30 days));
        vm.prank(COORDINATOR);
        escrow.unassign(jobId);
        _assertStatus(jobId, IJobEscrow.JobStatus.Open);
    }

    /// @dev With nothing pending, heartbeats keep working until lastProgressAt + PROGRESS_TIMEOUT (inclusive) and
    /// not a second longer; while a checkpoint waits for the verifiers they keep working.
    function testFuzz_heartbeat_succeedsIff_progressWithinTimeout(uint256 seed, bool pending) public {
        uint256 jobId = _createJob(100, 10, 1);
        _registerAndAssign(jobId, provider1, 1);
        if (pending) _report(jobId, 5); // progress at START as well
        // The job's own bound (interval 10 × 30 s is under the 1 h lease, so one lease); a pending checkpoint
        // keeps heartbeats working until its decision window closes, whichever is later.
        uint256 timeout = escrow.jobOf(jobId).progressTimeout;
        assertEq(timeout, LEASE, "progress timeout");
        uint256 decision = escrow.DECISION_TIMEOUT();
        if (pending && decision > timeout) timeout = decision;
        uint256 t = _instantAround(seed, START, START + timeout, LEASE);
        // Keep the lease alive up to t with heartbeats that are all within the timeout.
        uint256 last = START;
        while (last + LEASE < t) {
            last += LEASE;
            vm.warp(last);
            vm.prank(provider1);
            escrow.heartbeat(jobId, 1);
        }
        vm.warp(t);
        bool allowed = t <= START + timeout;

        // Past the window of its own report the hold is over (the report lapsed undecided); otherwise past the
        // bound the assignee made no progress.
        if (!allowed && pending) {
            vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowReportLapsed.selector, jobId, 1, 5));
        } else if (!allowed) {
            vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowNoProgress.selector, jobId, START, t));
        }
        vm.prank(provider1);
        escrow.heartbeat(jobId, 1);

        if (allowed) assertEq(escrow.jobOf(jobId).leaseExpiresAt, t + LEASE, "lease extended");
    }

    function testFuzz_disputeWindow_exactlyOneOf_disputeOrSettle(uint256 seed, uint64 window) public {
        window = uint64(bound(window, MIN_WINDOW, MAX_WINDOW));
        IJobEscrow.JobRequest memory request = _request(4, 2, 10, 40);
        request.disputeWindow = window;
        uint256 jobId = _createJob(request);
        _registerAndAssign(jobId, provider1, 10);
        _trainToEnd(jobId);
        _submitVerdict(jobId);
        (, bool open) = _warpAround(seed, window);
        _assertStatus(jobId, open ? IJobEscrow.JobStatus.DisputeWindow : IJobEscrow.JobStatus.Settleable);
        usdc.mint(client, BOND);

        uint256 snapshot = VmStateSnapshots(address(vm)).snapshotState();
        (bool disputed, ) = _call(client, abi.encodeCall(escrow.dispute, (jobId)));
        if (disputed) _assertStatus(jobId, IJobEscrow.JobStatus.Disputed);
        VmStateSnapshots(address(vm)).revertToState(snapshot);
        (bool settled, ) = _call(STRANGER, abi.encodeCall(escrow.settle, (jobId)));

        assertTrue(disputed != settled, "exactly one succeeds");
        assertEq(disputed, open, "the client disputes iff now <= submittedAt + disputeWindow");
        if (settled) {
            _assertStatus(jobId, IJobEscrow.JobStatus.Settled);
            assertEq(escrow.owed(client), 0, "budget fully spent: nothing to refund");
            assertEq(escrow.earningsOf(jobId, provider1), 40, "the verdict stands");
        }
    }

    function testFuzz_arbiterDeadline_exactlyOneOf_resolveOrSettle(uint256 seed, bool upheld) public {
        (uint256 jobId, ) = _jobInDisputeWindow(10);
        _dispute(jobId);
        (, bool inTime) = _warpAround(seed, ARBITER_TIMEOUT);
        _assertStatus(jobId, inTime ? IJobEscrow.JobStatus.Disputed : IJobEscrow.JobStatus.ArbiterTimedOut);

        uint256 snapshot = VmStateSnapshots(address(vm)).snapshotState();
        (bool resolved, ) = _call(ARBITER, abi.encodeCall(escrow.resolveDispute, (jobId, upheld)));
        if (resolved) {
            // Upheld: the whole budget and the bond go back to the client. Rejected: the bond is forfeited.
            assertEq(escrow.owed(client), upheld ? 40 + BOND : 0, "client");
            assertEq(escrow.owed(FEE_RECIPIENT), upheld ? 0 : BOND, "fee recipient");
        }
        VmStateSnapshots(address(vm)).revertToState(snapshot);
        (bool settled, ) = _call(STRANGER, abi.encodeCall(escrow.settle, (jobId)));
        if (settled) {
            // The arbiter stayed silent: the verdict stands and the bond goes back to the client.
            assertEq(escrow.owed(client), BOND, "bond returned");
            assertEq(escrow.owed(FEE_RECIPIENT), 0, "nothing forfeited");
            assertTrue(escrow.disputeOf(jobId).resolved, "resolved by timeout");
            _assertStatus(jobId, IJobEscrow.JobStatus.Settled);
        }

        assertTrue(resolved != settled, "exactly one succeeds");
        assertEq(resolved, inTime, "the arbiter decides iff now <= openedAt + ARBITER_TIMEOUT");
    }
}
