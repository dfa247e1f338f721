// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable, Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IJobEscrow} from "./interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";

/// @title JobEscrow
/// @notice The whole job lifecycle of GPUChain: locked budget, fenced assignments, verified checkpoints, verdict,
/// bonded dispute, permissionless settlement and pull payments.
/// @dev Every function touches one job and at most one provider: no call loops over jobs or providers.
contract JobEscrow is IJobEscrow, Ownable2Step, EIP712 {
    using SafeERC20 for IERC20;

    /// @notice How long the arbiter may stay silent on a dispute before the verdict stands by default.
    uint64 public constant ARBITER_TIMEOUT = 3 days;
    uint64 public constant MIN_DISPUTE_WINDOW = 1 minutes;
    uint64 public constant MAX_DISPUTE_WINDOW = 30 days;
    /// @notice How long an assignee may heartbeat without progress while no checkpoint of its is pending.
    uint64 public constant PROGRESS_TIMEOUT = 6 hours;

    bytes32 public constant CHECKPOINT_DECISION_TYPEHASH = keccak256(
        "CheckpointDecision(uint256 jobId,uint64 epoch,uint32 step,bytes32 checkpointHash,bool accept)"
    );
    bytes32 public constant VERDICT_TYPEHASH =
        keccak256("Verdict(uint256 jobId,bytes32 modelHash,uint256 metric,bool passed)");

    IERC20 public immutable token;
    IProviderRegistry public immutable registry;
    /// @notice The 2-of-3 verifier Safe. Its owners rotate through the Safe itself, never through this contract.
    address public immutable verifierSafe;
    /// @notice How long an assignee stays live after its last assignment, heartbeat, report or acceptance.
    uint64 public immutable leaseDuration;
    /// @notice The bond a client posts to dispute a verdict.
    uint128 public immutable disputeBond;

    address public coordinator;
    address public arbiter;
    address public feeRecipient;

    uint256 public jobCount;
    /// @notice Budgets not yet released (including providers' unclaimed earnings), bonds held, and balances owed.
    uint256 public totalLocked;
    uint256 public totalBonds;
    uint256 public totalWithdrawable;

    mapping(bytes32 templateId => bool) public isApprovedTemplate;
    mapping(uint256 jobId => Job) private _jobs;
    mapping(uint256 jobId => Verdict) private _verdicts;
    mapping(uint256 jobId => Dispute) private _disputes;
    mapping(uint256 jobId => mapping(address provider => uint128)) private _earnings;
    mapping(uint256 jobId => mapping(address provider => bool)) private _fenced;
    mapping(address account => uint256) private _withdrawable;

    constructor(IERC20 token_, IProviderRegistry registry_, Roles memory roles, uint64 leaseDuration_, uint128 bond)
        Ownable(roles.owner)
        EIP712("GPUChain JobEscrow", "1")
    {
        if (
            address(token_) == address(0) || address(registry_) == address(0) || roles.coordinator == address(0)
                || roles.arbiter == address(0) || roles.feeRecipient == address(0) || roles.verifierSafe == address(0)
        ) revert JobEscrowZeroAddress();
        if (leaseDuration_ == 0 || bond == 0) revert JobEscrowZeroAmount();
        token = token_;
        registry = registry_;
        verifierSafe = roles.verifierSafe;
        leaseDuration = leaseDuration_;
        disputeBond = bond;
        coordinator = roles.coordinator;
        arbiter = roles.arbiter;
        feeRecipient = roles.feeRecipient;
        emit CoordinatorSet(roles.coordinator);
        emit ArbiterSet(roles.arbiter);
        emit FeeRecipientSet(roles.feeRecipient);
    }

    // ------------------------------------------------------------------ admin

    function setTemplateApproval(bytes32 templateId, bool approved) external onlyOwner {
        if (templateId == bytes32(0)) revert JobEscrowZeroTemplate();
        isApprovedTemplate[templateId] = approved;
        emit TemplateApprovalSet(templateId, approved);
    }

    function setCoordinator(address coordinator_) external onlyOwner {
        if (coordinator_ == address(0)) revert JobEscrowZeroAddress();
        coordinator = coordinator_;
        emit CoordinatorSet(coordinator_);
    }

    function setArbiter(address arbiter_) external onlyOwner {
        if (arbiter_ == address(0)) revert JobEscrowZeroAddress();
        arbiter = arbiter_;
        emit ArbiterSet(arbiter_);
    }

    function setFeeRecipient(address feeRecipient_) external onlyOwner {
        if (feeRecipient_ == address(0)) revert JobEscrowZeroAddress();
        feeRecipient = feeRecipient_;
        emit FeeRecipientSet(feeRecipient_);
    }

    // ------------------------------------------------------------------ client

    /// @inheritdoc IJobEscrow
    function createJob(JobRequest calldata request) external returns (uint256 jobId) {
        return _createJob(request);
    }

    /// @inheritdoc IJobEscrow
    function createJobWithPermit(JobRequest calldata request, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        returns (uint256 jobId)
    {
        // A front-runner may have used the permit already; the allowance check in transferFrom still protects.
        try IERC20Permit(address(token)).permit(msg.sender, address(this), request.budget, deadline, v, r, s) {} catch {}
        return _createJob(request);
    }

    /// @inheritdoc IJobEscrow
    function cancel(uint256 jobId) external {
        Job storage job = _jobs[jobId];
        _expectStatus(jobId, _bit(JobStatus.Open));
        _onlyClient(jobId, job);
        job.phase = JobStatus.Cancelled;
        uint128 refund = job.budget - job.paid;
        _release(job.client, refund);
        emit JobCancelled(jobId, refund);
    }

    /// @inheritdoc IJobEscrow
    function dispute(uint256 jobId) external {
        Job storage job = _jobs[jobId];
        // Checks
        _expectStatus(jobId, _bit(JobStatus.DisputeWindow));
        _onlyClient(jobId, job);
        uint128 bond = disputeBond;
        uint256 allowance = token.allowance(msg.sender, address(this));
        if (allowance < bond) revert JobEscrowBondNotApproved(jobId, allowance, bond);
        // Effects
        job.phase = JobStatus.Disputed;
        _disputes[jobId] = Dispute({bond: bond, openedAt: uint64(block.timestamp), resolved: false, upheld: false});
        totalBonds += bond;
        emit DisputeOpened(jobId, msg.sender, bond, uint64(block.timestamp) + ARBITER_TIMEOUT);
        // Interactions
        token.safeTransferFrom(msg.sender, address(this), bond);
    }

    // ------------------------------------------------------------------ coordinator

    /// @inheritdoc IJobEscrow
    function assign(uint256 jobId, address provider) external {
        Job storage job = _jobs[jobId];
        // Checks: the coordinator's choice is only a hint; every condition is re-checked here.
        if (msg.sender != coordinator) revert JobEscrowNotCoordinator(msg.sender, coordinator);
        _expectStatus(jobId, _bit(JobStatus.Open));
        (uint128 price,, bool active) = registry.quote(provider);
        if (!active) revert JobEscrowProviderInactive(provider);
        if (_fenced[jobId][provider]) revert JobEscrowProviderFenced(jobId, provider);
        if (price > job.maxPricePerStep) revert JobEscrowPriceAboveMax(jobId, price, job.maxPricePerStep);
        uint256 needed = uint256(job.totalSteps - job.acceptedStep) * price;
        uint256 available = job.budget - job.paid;
        if (needed > available) revert JobEscrowBudgetShort(jobId, needed, available);
        // Effects
        uint64 epoch = job.epoch + 1;
        uint64 lease = uint64(block.timestamp) + leaseDuration;
        job.epoch = epoch;
        job.phase = JobStatus.Running;
        job.provider = provider;
        job.pricePerStep = price;
        job.leaseExpiresAt = lease;
        job.lastProgressAt = uint64(block.timestamp);
        emit ProviderAssigned(jobId, provider, epoch, price, job.acceptedStep, job.acceptedHash, lease);
    }

    /// @inheritdoc IJobEscrow
    function unassign(uint256 jobId) external {
        Job storage job = _jobs[jobId];
        _expectStatus(jobId, _bit(JobStatus.Running));
        UnassignReason reason = UnassignReason.Coordinator;
        if (msg.sender != coordinator) {
            if (block.timestamp <= job.leaseExpiresAt) {
                revert JobEscrowLeaseActive(jobId, job.leaseExpiresAt, block.timestamp);
            }
            reason = UnassignReason.LeaseLapsed;
        }
        _unassign(jobId, job, reason);
    }

    // ------------------------------------------------------------------ provider

    /// @inheritdoc IJobEscrow
    function heartbeat(uint256 jobId, uint64 epoch) external {
        Job storage job = _jobs[jobId];
        _checkAssignee(jobId, job, epoch);
        // Waiting for the verifiers is not the provider's stall; otherwise it must report within the timeout.
        if (job.pendingStep == 0 && block.timestamp > uint256(job.lastProgressAt) + PROGRESS_TIMEOUT) {
            revert JobEscrowNoProgress(jobId, job.lastProgressAt, block.timestamp);
        }
        uint64 lease = _extendLease(job);
        emit LeaseExtended(jobId, msg.sender, epoch, lease);
    }

    /// @inheritdoc IJobEscrow
    function reportCheckpoint(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash) external {
        Job storage job = _jobs[jobId];
        // Checks
        _checkAssignee(jobId, job, epoch);
        if (job.pendingStep != 0) revert JobEscrowCheckpointPending(jobId, job.pendingStep);
        // Summed in 256 bits: two uint32 values near the top of their range would overflow and brick the job.
        uint256 reach = uint256(job.acceptedStep) + job.checkpointInterval;
        uint32 maxStep = reach > job.totalSteps ? job.totalSteps : uint32(reach);
        if (step <= job.acceptedStep || step > maxStep) revert JobEscrowInvalidStep(jobId, step, job.acceptedStep, maxStep);
        if (checkpointHash == bytes32(0)) revert JobEscrowZeroHash(jobId);
        // Effects
        job.pendingStep = step;
        job.pendingHash = checkpointHash;
        job.lastProgressAt = uint64(block.timestamp);
        _extendLease(job);
        emit CheckpointReported(jobId, msg.sender, epoch, step, checkpointHash);
    }

    // ------------------------------------------------------------------ verifier multisig

    /// @inheritdoc IJobEscrow
    function acceptCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external {
        Job storage job = _jobs[jobId];
        // Checks
        _checkPending(jobId, job, epoch, step, checkpointHash);
        _authorizeVerifiers(checkpointDecisionDigest(jobId, epoch, step, checkpointHash, true), signatures);
        // Effects: the assignment's price was checked against the remaining budget at assign time.
        uint32 steps = step - job.acceptedStep;
        uint128 amount = uint128(steps) * job.pricePerStep;
        address provider = job.provider;
        job.paid += amount;
        _earnings[jobId][provider] += amount;
        job.acceptedStep = step;
        job.acceptedHash = checkpointHash;
        job.pendingStep = 0;
        job.pendingHash = bytes32(0);
        job.lastProgressAt = uint64(block.timestamp);
        _extendLease(job);
        emit CheckpointAccepted(jobId, provider, epoch, step, checkpointHash, steps, amount);
    }

    /// @inheritdoc IJobEscrow
    function refuseCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external {
        Job storage job = _jobs[jobId];
        // Checks
        _checkPending(jobId, job, epoch, step, checkpointHash);
        _authorizeVerifiers(checkpointDecisionDigest(jobId, epoch, step, checkpointHash, false), signatures);
        // Effects
        address provider = job.provider;
        _fenced[jobId][provider] = true;
        emit CheckpointRefused(jobId, provider, epoch, step, checkpointHash);
        _unassign(jobId, job, UnassignReason.Refused);
    }

    /// @inheritdoc IJobEscrow
    function submitVerdict(uint256 jobId, bytes32 modelHash, uint256 metric, bool passed, bytes calldata signatures)
        external
    {
        Job storage job = _jobs[jobId];
        // Checks: Open too, because a lapsed lease may have unassigned the provider after its last acceptance.
        _expectStatus(jobId, _bit(JobStatus.Open) | _bit(JobStatus.Running));
        if (job.acceptedStep != job.totalSteps) {
            revert JobEscrowTrainingIncomplete(jobId, job.acceptedStep, job.totalSteps);
        }
        if (modelHash != job.acceptedHash) revert JobEscrowVerdictHashMismatch(jobId, modelHash, job.acceptedHash);
        _authorizeVerifiers(verdictDigest(jobId, modelHash, metric, passed), signatures);
        // Effects: the epoch bump fences the provider; training is over.
        job.phase = JobStatus.DisputeWindow;
        uint64 epoch = job.epoch + 1;
        job.epoch = epoch;
        _verdicts[jobId] =
            Verdict({modelHash: modelHash, metric: metric, passed: passed, submittedAt: uint64(block.timestamp)});
        emit VerdictSubmitted(jobId, modelHash, metric, passed, uint64(block.timestamp) + job.disputeWindow, epoch);
    }

    // ------------------------------------------------------------------ arbiter

    /// @inheritdoc IJobEscrow
    function resolveDispute(uint256 jobId, bool upheld) external {
        Job storage job = _jobs[jobId];
        // Checks
        if (msg.sender != arbiter) revert JobEscrowNotArbiter(msg.sender, arbiter);
        _expectStatus(jobId, _bit(JobStatus.Disputed));
        // Effects
        Dispute storage d = _disputes[jobId];
        d.resolved = true;
        d.upheld = upheld;
        emit DisputeResolved(jobId, msg.sender, upheld);
        if (upheld) {
            // The client was right: no provider is paid for this job.
            job.paid = 0;
            _settle(jobId, job, d.bond, 0);
        } else {
            _settle(jobId, job, 0, d.bond);
        }
    }

    // ------------------------------------------------------------------ anyone

    /// @inheritdoc IJobEscrow
    function settle(uint256 jobId) external {
        Job storage job = _jobs[jobId];
        JobStatus status = _expectStatus(jobId, _bit(JobStatus.Settleable) | _bit(JobStatus.ArbiterTimedOut));
        uint128 bondReturned = 0;
        if (status == JobStatus.ArbiterTimedOut) {
            Dispute storage d = _disputes[jobId];
            d.resolved = true;
            bondReturned = d.bond;
            emit ArbiterTimedOut(jobId, msg.sender);
        }
        _settle(jobId, job, bondReturned, 0);
    }

    /// @inheritdoc IJobEscrow
    function claimEarnings(uint256 jobId, address provider) external {
        _expectStatus(jobId, _bit(JobStatus.Settled) | _bit(JobStatus.Cancelled));
        uint128 amount = _earnings[jobId][provider];
        if (amount == 0 || _disputes[jobId].upheld) revert JobEscrowNoEarnings(jobId, provider);
        _earnings[jobId][provider] = 0;
        _release(provider, amount);
        emit EarningsReleased(jobId, provider, amount);
    }

    /// @inheritdoc IJobEscrow
    function withdraw() external {
        // Checks
        uint256 amount = _withdrawable[msg.sender];
        if (amount == 0) revert JobEscrowNothingOwed(msg.sender);
        // Effects
        _withdrawable[msg.sender] = 0;
        totalWithdrawable -= amount;
        emit Withdrawn(msg.sender, amount);
        // Interactions
        token.safeTransfer(msg.sender, amount);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IJobEscrow
    function statusOf(uint256 jobId) public view returns (JobStatus) {
        Job storage job = _jobs[jobId];
        JobStatus phase = job.phase;
        if (phase == JobStatus.DisputeWindow) {
            uint256 deadline = uint256(_verdicts[jobId].submittedAt) + job.disputeWindow;
            return block.timestamp > deadline ? JobStatus.Settleable : JobStatus.DisputeWindow;
        }
        if (phase == JobStatus.Disputed) {
            uint256 deadline = uint256(_disputes[jobId].openedAt) + ARBITER_TIMEOUT;
            return block.timestamp > deadline ? JobStatus.ArbiterTimedOut : JobStatus.Disputed;
        }
        return phase;
    }

    /// @inheritdoc IJobEscrow
    function jobOf(uint256 jobId) external view returns (Job memory) {
        return _jobs[jobId];
    }

    /// @inheritdoc IJobEscrow
    function verdictOf(uint256 jobId) external view returns (Verdict memory) {
        return _verdicts[jobId];
    }

    /// @inheritdoc IJobEscrow
    function disputeOf(uint256 jobId) external view returns (Dispute memory) {
        return _disputes[jobId];
    }

    /// @inheritdoc IJobEscrow
    function earningsOf(uint256 jobId, address provider) external view returns (uint128) {
        return _disputes[jobId].upheld ? 0 : _earnings[jobId][provider];
    }

    /// @inheritdoc IJobEscrow
    function isFenced(uint256 jobId, address provider) external view returns (bool) {
        return _fenced[jobId][provider];
    }

    /// @inheritdoc IJobEscrow
    function owed(address account) external view returns (uint256) {
        return _withdrawable[account];
    }

    /// @inheritdoc IJobEscrow
    function reserves() external view returns (uint256 held, uint256 owes) {
        return (token.balanceOf(address(this)), totalLocked + totalBonds + totalWithdrawable);
    }

    /// @inheritdoc IJobEscrow
    function checkpointDecisionDigest(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash, bool accept)
        public
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(
            keccak256(abi.encode(CHECKPOINT_DECISION_TYPEHASH, jobId, epoch, step, checkpointHash, accept))
        );
    }

    /// @inheritdoc IJobEscrow
    function verdictDigest(uint256 jobId, bytes32 modelHash, uint256 metric, bool passed)
        public
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(keccak256(abi.encode(VERDICT_TYPEHASH, jobId, modelHash, metric, passed)));
    }

    // ------------------------------------------------------------------ internals

    function _createJob(JobRequest calldata request) private returns (uint256 jobId) {
        // Checks
        if (!isApprovedTemplate[request.templateId]) revert JobEscrowTemplateNotApproved(request.templateId);
        if (
            request.totalSteps == 0 || request.checkpointInterval == 0
                || request.checkpointInterval > request.totalSteps
        ) revert JobEscrowInvalidSteps(request.totalSteps, request.checkpointInterval);
        if (request.maxPricePerStep == 0 || request.budget == 0) revert JobEscrowZeroAmount();
        if (request.disputeWindow < MIN_DISPUTE_WINDOW || request.disputeWindow > MAX_DISPUTE_WINDOW) {
            revert JobEscrowInvalidDisputeWindow(request.disputeWindow, MIN_DISPUTE_WINDOW, MAX_DISPUTE_WINDOW);
        }
        // Effects
        jobId = ++jobCount;
        bytes32 seed = keccak256(abi.encode(block.chainid, address(this), jobId, msg.sender));
        Job storage job = _jobs[jobId];
        job.client = msg.sender;
        job.phase = JobStatus.Open;
        job.templateId = request.templateId;
        job.seed = seed;
        job.totalSteps = request.totalSteps;
        job.checkpointInterval = request.checkpointInterval;
        job.disputeWindow = request.disputeWindow;
        job.maxPricePerStep = request.maxPricePerStep;
        job.budget = request.budget;
        totalLocked += request.budget;
        emit JobCreated(
            jobId,
            msg.sender,
            request.templateId,
            seed,
            request.totalSteps,
            request.checkpointInterval,
            request.maxPricePerStep,
            request.budget,
            request.disputeWindow
        );
        // Interactions
        token.safeTransferFrom(msg.sender, address(this), request.budget);
    }

    function _unassign(uint256 jobId, Job storage job, UnassignReason reason) private {
        address provider = job.provider;
        uint64 epoch = job.epoch + 1;
        job.epoch = epoch;
        job.phase = JobStatus.Open;
        job.provider = address(0);
        job.pricePerStep = 0;
        job.leaseExpiresAt = 0;
        job.lastProgressAt = 0;
        job.pendingStep = 0;
        job.pendingHash = bytes32(0);
        emit ProviderUnassigned(jobId, provider, epoch, reason, msg.sender);
    }

    /// @dev Releases the client's refund (and the bond, whichever way it goes). Providers claim their earnings
    /// one by one afterwards, so settling never loops over providers.
    function _settle(uint256 jobId, Job storage job, uint128 bondReturned, uint128 bondForfeited) private {
        job.phase = JobStatus.Settled;
        uint128 refund = job.budget - job.paid;
        uint128 bond = bondReturned + bondForfeited;
        totalBonds -= bond;
        totalWithdrawable += bond;
        _withdrawable[job.client] += bondReturned;
        _withdrawable[feeRecipient] += bondForfeited;
        _release(job.client, refund);
        emit JobSettled(jobId, refund, job.paid, bondReturned, bondForfeited);
    }

    function _release(address account, uint128 amount) private {
        totalLocked -= amount;
        totalWithdrawable += amount;
        _withdrawable[account] += amount;
    }

    function _extendLease(Job storage job) private returns (uint64 lease) {
        lease = uint64(block.timestamp) + leaseDuration;
        job.leaseExpiresAt = lease;
    }

    function _checkAssignee(uint256 jobId, Job storage job, uint64 epoch) private view {
        if (epoch != job.epoch) revert JobEscrowStaleEpoch(jobId, epoch, job.epoch);
        _expectStatus(jobId, _bit(JobStatus.Running));
        if (msg.sender != job.provider) revert JobEscrowNotAssignee(jobId, msg.sender, job.provider);
        if (block.timestamp > job.leaseExpiresAt) {
            revert JobEscrowLeaseLapsed(jobId, job.leaseExpiresAt, block.timestamp);
        }
    }

    function _checkPending(uint256 jobId, Job storage job, uint64 epoch, uint32 step, bytes32 checkpointHash)
        private
        view
    {
        _expectStatus(jobId, _bit(JobStatus.Running));
        if (
            job.pendingStep == 0 || epoch != job.epoch || step != job.pendingStep || checkpointHash != job.pendingHash
        ) revert JobEscrowNoSuchPendingCheckpoint(jobId, epoch, step, checkpointHash);
    }

    /// @dev The Safe may call directly (a Safe transaction), or anyone may relay 2-of-3 owner signatures over the
    /// EIP-712 digest, checked by the Safe itself through EIP-1271. Relaying keeps verdicts of different jobs
    /// independent of the Safe's single transaction nonce.
    function _authorizeVerifiers(bytes32 digest, bytes calldata signatures) private view {
        if (msg.sender == verifierSafe) return;
        if (!SignatureChecker.isValidERC1271SignatureNow(verifierSafe, digest, signatures)) {
            revert JobEscrowInvalidVerifierSignatures(digest);
        }
    }

    function _onlyClient(uint256 jobId, Job storage job) private view {
        if (msg.sender != job.client) revert JobEscrowNotClient(jobId, msg.sender, job.client);
    }

    function _expectStatus(uint256 jobId, uint256 allowed) private view returns (JobStatus status) {
        status = statusOf(jobId);
        if (allowed & _bit(status) == 0) revert JobEscrowUnexpectedStatus(jobId, status, allowed);
    }

    function _bit(JobStatus status) private pure returns (uint256) {
        return 1 << uint8(status);
    }
}
