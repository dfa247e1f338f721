// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {PRBTest} from "@prb/test/src/PRBTest.sol";
import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "../../../contracts/interfaces/IProviderRegistry.sol";
import {bound} from "./Bound.sol";
import {ProtocolSetup} from "./ProtocolSetup.sol";

/// @notice Shared fixture of the fuzz tests: a real TestUSDC, ProviderRegistry and JobEscrow, named actors, and
/// one-line steps of the job lifecycle. `verifierSafe` is a plain address: pranking as it is exactly a Safe
/// transaction reaching the escrow (a direct call from the Safe with empty signatures).
abstract contract EscrowFixture is PRBTest, ProtocolSetup {
    uint64 internal constant WINDOW = 1 hours;
    uint64 internal constant MIN_WINDOW = 1 minutes;
    uint64 internal constant MAX_WINDOW = 30 days;
    uint256 internal constant START = 1_750_000_000;
    uint128 internal constant MIN_STAKE = 1e6;

    address internal constant verifierSafe = address(0x5AFE0000);
    address internal constant client = address(0xC1100001);
    address internal constant provider1 = address(0x9A000001);
    address internal constant provider2 = address(0x9A000002);

    function setUp() public virtual {
        vm.warp(START);
        _deployProtocol(verifierSafe, MIN_STAKE);
        vm.prank(client);
        usdc.approve(address(escrow), type(uint256).max);
    }

    // ------------------------------------------------------------------ requests and jobs

    function _request(
        uint32 totalSteps,
        uint32 interval,
        uint128 maxPrice,
        uint128 budget
    ) internal pure returns (IJobEscrow.JobRequest memory) {
        return
            IJobEscrow.JobRequest({
                templateId: TEMPLATE,
                totalSteps: totalSteps,
                checkpointInterval: interval,
                maxPricePerStep: maxPrice,
                budget: budget,
                disputeWindow: WINDOW
            });
    }

    function _createJob(IJobEscrow.JobRequest memory request) internal returns (uint256 jobId) {
        usdc.mint(client, request.budget);
        vm.prank(client);
        jobId = escrow.createJob(request);
    }

    /// @dev A job whose budget pays `totalSteps` at exactly `maxPrice`.
    function _createJob(uint32 totalSteps, uint32 interval, uint128 maxPrice) internal returns (uint256) {
        return _createJob(_request(totalSteps, interval, maxPrice, uint128(totalSteps) * maxPrice));
    }

    // ------------------------------------------------------------------ providers and assignment

    /// @dev Registers `provider` at `price` with a stake no job lock can exceed (locks are capped at 2^128 − 1).
    function _register(address provider, uint128 price) internal {
        vm.prank(provider);
        registry.register("provider", price, IProviderRegistry.DeviceKind.GPU, "NVIDIA H200", 141_000);
        _stake(provider, type(uint128).max);
    }

    function _stake(address provider, uint128 amount) internal {
        usdc.mint(provider, amount);
        vm.startPrank(provider);
        usdc.approve(address(registry), amount);
        registry.depositStake(amount);
        vm.stopPrank();
    }

    function _assign(uint256 jobId, address provider) internal {
        vm.prank(COORDINATOR);
        escrow.assign(jobId, provider);
    }

    /// @dev Registers `provider` at `price` and assigns it.
    function _registerAndAssign(uint256 jobId, address provider, uint128 price) internal {
        _register(provider, price);
        _assign(jobId, provider);
    }

    // ------------------------------------------------------------------ checkpoints and verdict

    function _hash(uint256 jobId, uint32 step) internal pure returns (bytes32) {
        return keccak256(abi.encode("checkpoint", jobId, step));
    }

    function _report(uint256 jobId, uint32 step) internal returns (bytes32 checkpointHash) {
        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        checkpointHash = _hash(jobId, step);
        vm.prank(job.provider);
        escrow.reportCheckpoint(jobId, job.epoch, step, checkpointHash);
    }

    function _acceptPending(uint256 jobId) internal {
        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        vm.prank(verifierSafe);
        escrow.acceptCheckpoint(jobId, job.epoch, job.pendingStep, job.pendingHash, "");
    }

    function _reportAndAccept(uint256 jobId, uint32 step) internal {
        _report(jobId, step);
        _acceptPending(jobId);
    }

    /// @dev `minSteps` up to 2^32 − 1 steps, and a price of 1 up to what keeps any uint32 step count's pay within
    /// uint128.
    function _anyStepsAndPrice(
        uint32 totalSteps,
        uint128 price,
        uint32 minSteps
    ) internal pure returns (uint32, uint128) {
        return (
            uint32(bound(totalSteps, minSteps, type(uint32).max)),
            uint128(bound(price, 1, type(uint128).max / type(uint32).max))
        );
    }

    /// @dev Two providers on one job (fuzzed as one struct): provider1 trains to `handover` at `price1` and is
    /// unassigned, provider2 trains on to `totalSteps` at `price2`.
    struct Handover {
        uint32 totalSteps;
        uint32 handover;
        uint128 price1;
        uint128 price2;
    }

    /// @dev `h` wrapped into 2..1e6 steps, a handover strictly inside them, and prices of 1..maxPrice.
    function _bounded(Handover memory h, uint256 maxPrice) internal pure returns (Handover memory) {
        h.totalSteps = uint32(bound(h.totalSteps, 2, 1_000_000));
        h.handover = uint32(bound(h.handover, 1, h.totalSteps - 1));
        h.price1 = uint128(bound(h.price1, 1, maxPrice));
        h.price2 = uint128(bound(h.price2, 1, maxPrice));
        return h;
    }

    function _higherPrice(Handover memory h) internal pure returns (uint128) {
        return h.price1 > h.price2 ? h.price1 : h.price2;
    }

    /// @dev What each provider earns on the handed-over job.
    function _earned(Handover memory h) internal pure returns (uint256 earned1, uint256 earned2) {
        earned1 = uint256(h.handover) * h.price1;
        earned2 = uint256(h.totalSteps - h.handover) * h.price2;
    }

    function _handOver(uint256 jobId, Handover memory h) internal {
        _registerAndAssign(jobId, provider1, h.price1);
        _reportAndAccept(jobId, h.handover);
        vm.prank(COORDINATOR);
        escrow.unassign(jobId);
        _registerAndAssign(jobId, provider2, h.price2);
        _reportAndAccept(jobId, h.totalSteps);
    }

    /// @dev The assignee reports and the Safe accepts the furthest allowed step until every step is accepted.
    function _trainToEnd(uint256 jobId) internal {
        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        while (job.acceptedStep < job.totalSteps) {
            uint256 reach = uint256(job.acceptedStep) + job.checkpointInterval;
            _reportAndAccept(jobId, reach > job.totalSteps ? job.totalSteps : uint32(reach));
            job = escrow.jobOf(jobId);
        }
    }

    function _submitVerdict(uint256 jobId) internal {
        bytes32 modelHash = escrow.jobOf(jobId).acceptedHash;
        vm.prank(verifierSafe);
        escrow.submitVerdict(jobId, modelHash, 9_500, true, "");
    }

    /// @dev A fully trained job with a verdict, in its dispute window. Returns the dispute deadline.
    function _jobInDisputeWindow(uint128 price) internal returns (uint256 jobId, uint256 deadline) {
        jobId = _createJob(4, 2, price);
        _registerAndAssign(jobId, provider1, price);
        _trainToEnd(jobId);
        _submitVerdict(jobId);
        deadline = block.timestamp + WINDOW;
    }

    function _dispute(uint256 jobId) internal {
        usdc.mint(client, BOND);
        vm.prank(client);
        escrow.dispute(jobId);
    }

    // ------------------------------------------------------------------ errors

    function _unexpectedStatus(
        uint256 jobId,
        IJobEscrow.JobStatus current,
        uint256 allowed
    ) internal pure returns (bytes memory) {
        return abi.encodeWithSelector(IJobEscrow.JobEscrowUnexpectedStatus.selector, jobId, current, allowed);
    }

    function _bit(IJobEscrow.JobStatus status) internal pure returns (uint256) {
        return 1 << uint8(status);
    }

    function _assertStatus(uint256 jobId, IJobEscrow.JobStatus expected) internal {
        assertEq(uint8(escrow.statusOf(jobId)), uint8(expected), "status");
    }
}
