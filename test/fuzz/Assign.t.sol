// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "../../contracts/interfaces/IProviderRegistry.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @notice assign with random prices and budgets: it succeeds exactly when the provider is active, not fenced,
/// within the job's max price, and the unspent budget covers the remaining steps at the provider's price.
contract AssignFuzzTest is EscrowFixture {
    function testFuzz_assign_succeedsIff_budgetCoversRemainingSteps(
        uint32 totalSteps,
        uint128 price,
        uint128 shortBy,
        bool short
    ) public {
        (totalSteps, price) = _anyStepsAndPrice(totalSteps, price, 1);
        uint128 needed = uint128(totalSteps) * price;
        shortBy = short ? uint128(bound(shortBy, 1, needed - 1 == 0 ? 1 : needed - 1)) : 0;
        vm.assume(needed > shortBy);
        uint256 jobId = _createJob(_request(totalSteps, totalSteps, price, needed - shortBy));
        _register(provider1, price);

        if (short) {
            vm.expectRevert(
                abi.encodeWithSelector(IJobEscrow.JobEscrowBudgetShort.selector, jobId, needed, needed - shortBy)
            );
        }
        _assign(jobId, provider1);

        if (!short) {
            IJobEscrow.Job memory job = escrow.jobOf(jobId);
            assertEq(job.provider, provider1, "provider");
            assertEq(job.pricePerStep, price, "price");
            assertEq(job.epoch, 1, "epoch");
            assertEq(job.leaseExpiresAt, block.timestamp + LEASE, "lease");
            _assertStatus(jobId, IJobEscrow.JobStatus.Running);
        }
    }

    /// @dev After accepted work and a change of provider, only the remaining steps at the new price must fit in
    /// what is left of the budget.
    function testFuzz_assign_afterAcceptedWork_checksRemainingStepsAgainstUnspentBudget(
        Handover memory h,
        bool short
    ) public {
        h = _bounded(h, 1e12);
        (uint256 spent, uint256 needed) = _earned(h);
        uint128 budget = uint128(spent + needed - (short ? 1 : 0));
        // The first assignment must fit too: budget covers totalSteps at price1.
        vm.assume(uint256(h.totalSteps) * h.price1 <= budget);
        uint256 jobId = _createJob(_request(h.totalSteps, h.totalSteps, _higherPrice(h), budget));
        _registerAndAssign(jobId, provider1, h.price1);
        _reportAndAccept(jobId, h.handover);
        vm.prank(COORDINATOR);
        escrow.unassign(jobId);
        _register(provider2, h.price2);

        if (short) {
            vm.expectRevert(
                abi.encodeWithSelector(IJobEscrow.JobEscrowBudgetShort.selector, jobId, needed, needed - 1)
            );
        }
        _assign(jobId, provider2);

        if (!short) {
            IJobEscrow.Job memory job = escrow.jobOf(jobId);
            assertEq(job.provider, provider2, "provider");
            assertEq(job.epoch, 3, "epoch: assign, unassign, assign");
            assertEq(job.acceptedStep, h.handover, "work resumes from the accepted step");
            assertEq(job.paid, spent, "paid");
        }
    }

    function testFuzz_assign_revertsIf_priceAboveMax(uint128 maxPrice, uint128 price) public {
        maxPrice = uint128(bound(maxPrice, 1, type(uint128).max / 10 - 1));
        price = uint128(bound(price, maxPrice + 1, type(uint128).max / 10));
        uint256 jobId = _createJob(_request(10, 10, maxPrice, uint128(10) * price));
        _register(provider1, price);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowPriceAboveMax.selector, jobId, price, maxPrice));
        _assign(jobId, provider1);
    }

    function testFuzz_assign_revertsIf_providerInactiveOrUnknown(address provider, bool registerThenDeactivate) public {
        uint256 jobId = _createJob(10, 5, 100);
        if (registerThenDeactivate) {
            provider = provider1;
            _register(provider, 100);
            vm.prank(provider);
            registry.deactivate();
        } else {
            vm.assume(registry.providerOf(provider).registeredAt == 0);
        }
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowProviderInactive.selector, provider));
        _assign(jobId, provider);
    }

    function testFuzz_assign_revertsIf_callerNotCoordinator(address caller) public {
        vm.assume(caller != COORDINATOR);
        uint256 jobId = _createJob(10, 5, 100);
        _register(provider1, 100);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowNotCoordinator.selector, caller, COORDINATOR));
        vm.prank(caller);
        escrow.assign(jobId, provider1);
    }

    function testFuzz_assign_revertsIf_providerWasRefused(uint32 step) public {
        uint256 jobId = _createJob(10, 10, 100);
        _registerAndAssign(jobId, provider1, 100);
        step = uint32(bound(step, 1, 10));
        bytes32 checkpointHash = _report(jobId, step);
        vm.prank(verifierSafe);
        escrow.refuseCheckpoint(jobId, 1, step, checkpointHash, "");
        assertTrue(escrow.isFenced(jobId, provider1), "fenced");
        assertEq(escrow.jobOf(jobId).epoch, 2, "refusal bumps the epoch");

        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowProviderFenced.selector, jobId, provider1));
        _assign(jobId, provider1);
        // Any other provider may take the job from the last accepted checkpoint (none here).
        _registerAndAssign(jobId, provider2, 100);
        assertEq(escrow.jobOf(jobId).acceptedStep, 0, "resumes from the last accepted step");
    }

    /// @dev The price is fixed at assignment: a later registry update changes neither the credit nor the job.
    function testFuzz_assign_fixesThePriceForTheAssignment(uint128 price, uint128 newPrice, uint32 step) public {
        price = uint128(bound(price, 1, 1e18));
        newPrice = uint128(bound(newPrice, 1, type(uint128).max));
        step = uint32(bound(step, 1, 10));
        uint256 jobId = _createJob(10, 10, price);
        _registerAndAssign(jobId, provider1, price);
        vm.prank(provider1);
        registry.update(newPrice, IProviderRegistry.DeviceKind.CPU, "other", 1);

        _reportAndAccept(jobId, step);

        assertEq(escrow.jobOf(jobId).pricePerStep, price, "price");
        assertEq(escrow.earningsOf(jobId, provider1), uint128(step) * price, "credited at the assignment's price");
    }
}
