// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {EscrowFixture} from "./utils/EscrowFixture.sol";
import {bound} from "./utils/Bound.sol";

/// @notice createJob / createJobWithPermit with random parameters: a valid request locks exactly its budget; an
/// invalid one reverts with the error that names the bad value.
contract CreateJobFuzzTest is EscrowFixture {
    bytes32 private constant PERMIT_TYPEHASH = keccak256(
        "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)"
    );

    /// @dev Any valid request, spanning the whole range of every field.
    function _validRequest(
        uint32 totalSteps,
        uint32 interval,
        uint128 maxPrice,
        uint128 budget,
        uint64 window
    ) private pure returns (IJobEscrow.JobRequest memory request) {
        totalSteps = uint32(bound(totalSteps, 1, type(uint32).max));
        request = IJobEscrow.JobRequest({
            templateId: TEMPLATE,
            totalSteps: totalSteps,
            checkpointInterval: uint32(bound(interval, 1, totalSteps)),
            maxPricePerStep: uint128(bound(maxPrice, 1, type(uint128).max)),
            budget: uint128(bound(budget, 1, type(uint128).max)),
            disputeWindow: uint64(bound(window, MIN_WINDOW, MAX_WINDOW))
        });
    }

    function testFuzz_createJob_locksExactlyTheBudget(
        uint32 totalSteps,
        uint32 interval,
        uint128 maxPrice,
        uint128 budget,
        uint64 window
    ) public {
        IJobEscrow.JobRequest memory request = _validRequest(totalSteps, interval, maxPrice, budget, window);
        usdc.mint(client, request.budget);
        uint256 lockedBefore = escrow.totalLocked();

        vm.prank(client);
        uint256 jobId = escrow.createJob(request);

        assertEq(jobId, 1, "jobId");
        assertEq(usdc.balanceOf(address(escrow)), request.budget, "escrow balance");
        assertEq(usdc.balanceOf(client), 0, "client balance");
        assertEq(escrow.totalLocked(), lockedBefore + request.budget, "totalLocked");
        (uint256 held, uint256 owes) = escrow.reserves();
        // reserves() counts the registry's stakes too; this test is about the escrow's own books.
        (uint256 stakeHeld, uint256 stakes) = registry.reserves();
        (held, owes) = (held - stakeHeld, owes - stakes);
        assertEq(held, owes, "reserves");
        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        assertEq(job.client, client, "client");
        assertEq(job.budget, request.budget, "budget");
        assertEq(job.paid, 0, "paid");
        assertEq(job.epoch, 0, "epoch");
        assertEq(job.totalSteps, request.totalSteps, "totalSteps");
        assertEq(job.checkpointInterval, request.checkpointInterval, "interval");
        assertEq(job.maxPricePerStep, request.maxPricePerStep, "maxPrice");
        assertEq(job.disputeWindow, request.disputeWindow, "window");
        _assertStatus(jobId, IJobEscrow.JobStatus.Open);
    }

    function testFuzz_createJobWithPermit_locksExactlyTheBudget(
        uint256 privateKey,
        uint128 budget,
        bool frontRun
    ) public {
        privateKey = bound(privateKey, 1, 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140);
        address signer = vm.addr(privateKey);
        budget = uint128(bound(budget, 1, type(uint128).max));
        usdc.mint(signer, budget);
        uint256 deadline = block.timestamp + 1 hours;
        bytes32 digest = keccak256(
            abi.encodePacked(
                hex"1901",
                usdc.DOMAIN_SEPARATOR(),
                keccak256(abi.encode(PERMIT_TYPEHASH, signer, address(escrow), budget, 0, deadline))
            )
        );
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(privateKey, digest);
        if (frontRun) usdc.permit(signer, address(escrow), budget, deadline, v, r, s); // someone used it first

        vm.prank(signer);
        uint256 jobId = escrow.createJobWithPermit(_request(10, 5, 1, budget), deadline, v, r, s);

        assertEq(usdc.balanceOf(address(escrow)), budget, "escrow balance");
        assertEq(escrow.jobOf(jobId).client, signer, "client");
        assertEq(escrow.totalLocked(), budget, "totalLocked");
    }

    function testFuzz_createJob_revertsIf_stepsInvalid(uint32 totalSteps, uint32 interval, uint8 mode) public {
        if (mode % 3 == 0) {
            totalSteps = 0; // no steps
        } else if (mode % 3 == 1) {
            interval = 0; // no checkpoint interval
        } else {
            totalSteps = uint32(bound(totalSteps, 1, type(uint32).max - 1));
            interval = uint32(bound(interval, totalSteps + 1, type(uint32).max)); // interval beyond the job
        }
        IJobEscrow.JobRequest memory request = _request(totalSteps, interval, 1, 1);
        usdc.mint(client, 1);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowInvalidSteps.selector, totalSteps, interval));
        vm.prank(client);
        escrow.createJob(request);
    }

    function testFuzz_createJob_revertsIf_priceOrBudgetZero(uint128 maxPrice, uint128 budget, bool zeroPrice) public {
        maxPrice = zeroPrice ? 0 : maxPrice;
        budget = zeroPrice ? budget : 0;
        IJobEscrow.JobRequest memory request = _request(10, 5, maxPrice, budget);
        usdc.mint(client, budget);
        vm.expectRevert(IJobEscrow.JobEscrowZeroAmount.selector);
        vm.prank(client);
        escrow.createJob(request);
    }

    function testFuzz_createJob_revertsIf_disputeWindowOutOfRange(uint64 window) public {
        vm.assume(window < MIN_WINDOW || window > MAX_WINDOW);
        IJobEscrow.JobRequest memory request = _request(10, 5, 1, 10);
        request.disputeWindow = window;
        usdc.mint(client, 10);
        vm.expectRevert(
            abi.encodeWithSelector(IJobEscrow.JobEscrowInvalidDisputeWindow.selector, window, MIN_WINDOW, MAX_WINDOW)
        );
        vm.prank(client);
        escrow.createJob(request);
    }

    function test_createJob_acceptsTheDisputeWindowBounds() public {
        IJobEscrow.JobRequest memory request = _request(10, 5, 1, 10);
        request.disputeWindow = MIN_WINDOW;
        assertEq(escrow.jobOf(_createJob(request)).disputeWindow, MIN_WINDOW, "min");
        request.disputeWindow = MAX_WINDOW;
        assertEq(escrow.jobOf(_createJob(request)).disputeWindow, MAX_WINDOW, "max");
    }

    function testFuzz_createJob_revertsIf_templateNotApproved(bytes32 templateId) public {
        vm.assume(templateId != TEMPLATE);
        IJobEscrow.JobRequest memory request = _request(10, 5, 1, 10);
        request.templateId = templateId;
        usdc.mint(client, 10);
        vm.expectRevert(abi.encodeWithSelector(IJobEscrow.JobEscrowTemplateNotApproved.selector, templateId));
        vm.prank(client);
        escrow.createJob(request);
    }

    function testFuzz_createJob_revertsIf_allowanceShort(uint128 budget, uint128 allowance) public {
        budget = uint128(bound(budget, 1, type(uint128).max));
        allowance = uint128(bound(allowance, 0, budget - 1));
        usdc.mint(STRANGER, budget);
        vm.prank(STRANGER);
        usdc.approve(address(escrow), allowance);
        vm.expectRevert(
            abi.encodeWithSelector(IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), allowance, budget)
        );
        vm.prank(STRANGER);
        escrow.createJob(_request(10, 5, 1, budget));
    }
}
