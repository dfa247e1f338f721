// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @notice Settlement and pull payments with random prices and budgets: every unit of test USDC that went in comes
/// out to the right account, exactly once, and the escrow ends empty.
contract SettlementFuzzTest is EscrowFixture {
    /// @dev A job trained by two providers at two prices (see `_handOver`), with a verdict. Returns what each
    /// earned.
    function _trainedJob(
        Handover memory h,
        uint128 extra
    ) private returns (uint256 jobId, uint256 budget, uint256 earned1, uint256 earned2) {
        h = _bounded(h, 1e18);
        uint128 maxPrice = _higherPrice(h);
        budget = uint256(h.totalSteps) * maxPrice + bound(extra, 0, 1e24);
        jobId = _createJob(_request(h.totalSteps, h.totalSteps, maxPrice, uint128(budget)));
        _handOver(jobId, h);
        _submitVerdict(jobId);
        (earned1, earned2) = _earned(h);
    }

    /// @dev The trained job disputed, and the arbiter's decision.
    function _resolvedDispute(
        Handover memory h,
        uint128 extra,
        bool upheld
    ) private returns (uint256 jobId, uint256 budget, uint256 earned1, uint256 earned2) {
        (jobId, budget, earned1, earned2) = _trainedJob(h, extra);
        _dispute(jobId);
        vm.prank(ARBITER);
        escrow.resolveDispute(jobId, upheld);
    }

    function _claimAndWithdrawAll(uint256 jobId) private {
        escrow.claimEarnings(jobId, provider1);
        escrow.claimEarnings(jobId, provider2);
        vm.prank(provider1);
        escrow.withdraw();
        vm.prank(provider2);
        escrow.withdraw();
    }

    function testFuzz_settle_afterWindow_paysRefundAndEarningsExactlyOnce(Handover memory h, uint128 extra) public {
        (uint256 jobId, uint256 budget, uint256 earned1, uint256 earned2) = _trainedJob(h, extra);
        vm.warp(block.timestamp + WINDOW + 1);
        escrow.settle(jobId);

        assertEq(escrow.owed(client), budget - earned1 - earned2, "refund");
        _claimAndWithdrawAll(jobId);
        vm.prank(client);
        escrow.withdraw();

        assertEq(usdc.balanceOf(provider1), earned1, "provider1 paid");
        assertEq(usdc.balanceOf(provider2), earned2, "provider2 paid");
        assertEq(usdc.balanceOf(client), budget - earned1 - earned2, "client refunded");
        assertEq(usdc.balanceOf(address(escrow)), 0, "escrow empty");
        (uint256 held, uint256 owes) = escrow.reserves();
        // reserves() counts the registry's stakes too; this test is about the escrow's own books.
        (uint256 stakeHeld, uint256 stakes) = registry.reserves();
        (held, owes) = (held - stakeHeld, owes - stakes);
        assertEq(held, 0, "held");
        assertEq(owes, 0, "owes");
        // Nothing can be settled, claimed or withdrawn twice.
        uint256 settleable = _bit(IJobEscrow.JobStatus.Settleable) | _bit(IJobEscrow.JobStatus.ArbiterTimedOut);
        vm.expectRevert(_unexpectedStatus(jobId, IJobEscrow.JobStatus.Settled, settleable));
        escrow.settle(jobId);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowNoEarnings.selector, jobId, provider1));
        escrow.claimEarnings(jobId, provider1);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowNothingOwed.selector, client));
        vm.prank(client);
        escrow.withdraw();
    }

    function testFuzz_resolveDispute_upheld_voidsEveryPaymentAndReturnsBudgetAndBond(
        Handover memory h,
        uint128 extra
    ) public {
        (uint256 jobId, uint256 budget, , ) = _resolvedDispute(h, extra, true);

        assertEq(escrow.owed(client), budget + BOND, "budget and bond back to the client");
        assertEq(escrow.earningsOf(jobId, provider1), 0, "provider1 voided");
        assertEq(escrow.earningsOf(jobId, provider2), 0, "provider2 voided");
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowNoEarnings.selector, jobId, provider1));
        escrow.claimEarnings(jobId, provider1);
        vm.prank(client);
        escrow.withdraw();
        assertEq(usdc.balanceOf(address(escrow)), 0, "escrow empty");
        assertEq(escrow.totalLocked() + escrow.totalBonds() + escrow.totalWithdrawable(), 0, "owes nothing");
    }

    function testFuzz_resolveDispute_rejected_forfeitsTheBondAndPaysProviders(Handover memory h, uint128 extra) public {
        (uint256 jobId, uint256 budget, uint256 earned1, uint256 earned2) = _resolvedDispute(h, extra, false);

        assertEq(escrow.owed(client), budget - earned1 - earned2, "refund only");
        assertEq(escrow.owed(FEE_RECIPIENT), BOND, "bond forfeited");
        _claimAndWithdrawAll(jobId);
        vm.prank(client);
        escrow.withdraw();
        vm.prank(FEE_RECIPIENT);
        escrow.withdraw();
        assertEq(usdc.balanceOf(provider1), earned1, "provider1 paid");
        assertEq(usdc.balanceOf(provider2), earned2, "provider2 paid");
        assertEq(usdc.balanceOf(address(escrow)), 0, "escrow empty");
    }

    /// @dev A cancelled job refunds what was not spent; accepted work stays claimable.
    function testFuzz_cancel_refundsUnspentBudgetAndKeepsEarnings(
        uint32 accepted,
        uint128 price,
        uint128 extra
    ) public {
        accepted = uint32(bound(accepted, 0, 100));
        price = uint128(bound(price, 1, 1e18));
        uint256 budget = 100 * uint256(price) + bound(extra, 0, 1e24);
        uint256 jobId = _createJob(_request(100, 100, price, uint128(budget)));
        _registerAndAssign(jobId, provider1, price);
        if (accepted > 0) _reportAndAccept(jobId, accepted);
        vm.prank(COORDINATOR);
        escrow.unassign(jobId);

        vm.prank(client);
        escrow.cancel(jobId);

        uint256 earned = uint256(accepted) * price;
        // The coordinator's unassignment inside the progress timeout never forfeits, on probation or not.
        assertEq(escrow.owed(client), budget - earned, "refund");
        assertEq(escrow.totalLocked(), earned, "earnings stay locked until claimed");
        if (earned > 0) {
            escrow.claimEarnings(jobId, provider1);
            assertEq(escrow.owed(provider1), earned, "claimable after cancel");
        }
        _assertStatus(jobId, IJobEscrow.JobStatus.Cancelled);
    }

    /// @dev Only an Open job can be cancelled: not while a provider works on it, nor after the verdict.
    function testFuzz_cancel_revertsIf_notOpen(uint8 stage) public {
        uint256 jobId = _createJob(4, 2, 10);
        _registerAndAssign(jobId, provider1, 10);
        IJobEscrow.JobStatus status = IJobEscrow.JobStatus.Running;
        if (stage % 3 > 0) {
            _trainToEnd(jobId);
            _submitVerdict(jobId);
            status = IJobEscrow.JobStatus.DisputeWindow;
        }
        if (stage % 3 > 1) {
            vm.warp(block.timestamp + WINDOW + 1);
            escrow.settle(jobId);
            status = IJobEscrow.JobStatus.Settled;
        }
        vm.expectRevert(_unexpectedStatus(jobId, status, _bit(IJobEscrow.JobStatus.Open)));
        vm.prank(client);
        escrow.cancel(jobId);
    }
}
