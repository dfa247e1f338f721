// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable, Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IJobEscrow} from "./interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";
import {VerifierQuorum} from "./VerifierQuorum.sol";

/// @title JobEscrow
/// @notice The whole job lifecycle of GPUChain: locked budget, fenced assignments, verified checkpoints, verdict,
/// bonded dispute, permissionless settlement and pull payments.
/// @dev Every function touches one job and at most one provider: no call loops over jobs or providers.
/// Whether the verifier Safe decided (digests, owner signatures, EIP-1271) is its base `VerifierQuorum`'s.
contract JobEscrow is IJobEscrow, Ownable2Step, VerifierQuorum {
    using SafeERC20 for IERC20;

    /// @notice How long the arbiter may stay silent on a dispute before the verdict stands by default.
    uint64 public constant ARBITER_TIMEOUT = 3 days;
    uint64 public constant MIN_DISPUTE_WINDOW = 1 minutes;
    uint64 public constant MAX_DISPUTE_WINDOW = 30 days;
    /// @notice The longest progress timeout any job gets.
    uint64 public constant PROGRESS_TIMEOUT = 6 hours;
    /// @notice The slowest step any job allows, and what a job of a template without a step bound allows.
    uint64 public constant MAX_SECONDS_PER_STEP = 30;
    /// @notice The longest checkpoint interval whose progress timeout is not capped (PROGRESS_TIMEOUT /
    /// MAX_SECONDS_PER_STEP steps) for a template without a step bound. Past a job's uncapped interval a provider
    /// working within the job's step bound may not reach its first report before its heartbeats stop counting, so a
    /// lapse there is no evidence and never forfeits.
    uint32 public constant MAX_CHECKPOINT_INTERVAL = uint32(PROGRESS_TIMEOUT / MAX_SECONDS_PER_STEP);
    uint64 public constant DECISION_TIMEOUT = 1 hours;
    uint64 public constant STALL_EXPIRY = 7 days;
    uint16 public constant CLIENT_SHARE_BPS = 5_000;
    uint16 public constant FINDER_SHARE_BPS = 2_000;

    IERC20 public immutable token;
    IProviderRegistry public immutable registry;
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

    /// @dev A job as stored: the fields of `Job` packed by when they are touched, so that a report and an
    /// acceptance each rewrite few slots, and none of them goes back to zero between checkpoints (a nonzero
    /// rewrite costs 2 900 gas against 20 000 for zero to nonzero). `seed`, `progressTimeout` and
    /// `leaseExpiresAt` are derived, and the verdict's model hash is the accepted hash; `jobOf` and `verdictOf`
    /// rebuild the interface's structs. The pending fields are left in place after a decision and mean
    /// nothing while `pendingStep` is 0. The stall clock sits in slot 1 with the accepted step it follows, so an
    /// acceptance restarts it without touching another slot; the report's time sits with its reporter in slot 2.
    struct JobRecord {
        // slot 0: who holds the job, and what it trains
        address provider;
        uint48 epoch; // bumped once per transaction at most: never near 2^48
        JobStatus phase;
        bool verdictPassed;
        uint32 template; // index into _templateIds (a bytes32 id would take a slot of its own)
        // slot 1: steps and clocks, rewritten by every report and acceptance
        uint32 acceptedStep;
        uint32 pendingStep;
        uint32 totalSteps;
        uint32 checkpointInterval;
        uint40 liveAt; // last assignment, heartbeat, report or acceptance (0 when Open); the lease runs from it
        uint40 lastProgressAt;
        uint32 stallSince; // creation or the last acceptance: `expire` runs from here (STALL_EXPIRY); to 2106
        uint16 stepMillis; // the template's step bound at creation (ms): progressTimeout = interval × it
        // slot 2: the pending checkpoint's reporter and when it reported
        address pendingProvider;
        uint48 pendingEpoch;
        uint40 reportedAt;
        // slot 3: the holder's price and the pending checkpoint's price (equal while its reporter holds the job)
        uint128 pricePerStep;
        uint128 pendingPrice;
        // slot 4
        uint128 budget;
        uint128 paid;
        // slot 5: the client, and the verdict's time with the dispute window that runs from it
        address client;
        uint32 disputeWindow; // at most MAX_DISPUTE_WINDOW
        uint40 verdictAt;
        // slot 6..8
        uint128 maxPricePerStep;
        bytes32 pendingHash; // after the verdict (no checkpoint can be pending any more): the verdict's metric
        bytes32 acceptedHash;
    }

    struct Template {
        bool approved;
        uint32 index; // 1-based, given at the first approval and kept
        uint16 stepMillis; // the slowest an honest step may take, ms (0: MAX_SECONDS_PER_STEP)
    }

    uint32 private _templateCount;
    mapping(bytes32 templateId => Template) private _templates;
    mapping(uint32 index => bytes32 templateId) private _templateIds;
    mapping(uint256 jobId => JobRecord) private _jobs;
    mapping(uint256 jobId => Dispute) private _disputes;
    mapping(uint256 jobId => mapping(address provider => uint128)) private _earnings;
    mapping(uint256 jobId => mapping(address provider => bool)) private _fenced;
    mapping(address account => uint256) private _withdrawable;
    /// @dev Providers with an accepted checkpoint. Before it a provider is on probation: a hold it ends without an
    /// accepted checkpoint forfeits its lock to the client, so trying (and failing) is never free.
    mapping(address provider => bool) private _proven;

    constructor(
        IERC20 token_,
        IProviderRegistry registry_,
        Roles memory roles,
        uint64 leaseDuration_,
        uint128 bond
    ) Ownable(roles.owner) VerifierQuorum(roles.verifierSafe, "GPUChain JobEscrow", "1") {
        if (
            address(token_) == address(0) ||
            address(registry_) == address(0) ||
            roles.coordinator == address(0) ||
            roles.arbiter == address(0) ||
            roles.feeRecipient == address(0) ||
            roles.verifierSafe == address(0)
        ) revert JobEscrowZeroAddress();
        if (leaseDuration_ == 0 || bond == 0) revert JobEscrowZeroAmount();
        address stakeToken = address(registry_.stakeToken());
        if (stakeToken != address(token_)) revert JobEscrowStakeTokenMismatch(address(token_), stakeToken);
        uint64 unbonding = registry_.unbondingDelay();
        if (unbonding <= DECISION_TIMEOUT) revert JobEscrowUnbondingTooShort(unbonding, DECISION_TIMEOUT);
        token = token_;
        registry = registry_;
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

    /// @inheritdoc IJobEscrow
    function setTemplateApproval(bytes32 templateId, bool approved) external onlyOwner {
        _templateRecord(templateId).approved = approved;
        emit TemplateApprovalSet(templateId, approved);
    }

    /// @inheritdoc IJobEscrow
    function setTemplateStepBound(bytes32 templateId, uint16 stepMillis) external onlyOwner {
        if (stepMillis == 0 || stepMillis > MAX_SECONDS_PER_STEP * 1000) {
            revert JobEscrowInvalidStepBound(templateId, stepMillis, uint16(MAX_SECONDS_PER_STEP * 1000));
        }
        _templateRecord(templateId).stepMillis = stepMillis;
        emit TemplateStepBoundSet(templateId, stepMillis);
    }

    /// @inheritdoc IJobEscrow
    function setCoordinator(address coordinator_) external onlyOwner {
        if (coordinator_ == address(0)) revert JobEscrowZeroAddress();
        coordinator = coordinator_;
        emit CoordinatorSet(coordinator_);
    }

    /// @inheritdoc IJobEscrow
    function setArbiter(address arbiter_) external onlyOwner {
        if (arbiter_ == address(0)) revert JobEscrowZeroAddress();
        arbiter = arbiter_;
        emit ArbiterSet(arbiter_);
    }

    /// @inheritdoc IJobEscrow
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
    function createJobWithPermit(
        JobRequest calldata request,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256 jobId) {
        // A front-runner may have used the permit already; the allowance check in transferFrom still protects.
        try
            IERC20Permit(address(token)).permit(msg.sender, address(this), request.budget, deadline, v, r, s)
        {} catch {}
        return _createJob(request);
    }

    /// @inheritdoc IJobEscrow
    function cancel(uint256 jobId) external {
        JobRecord storage job = _jobs[jobId];
        _expectStatus(jobId, _bit(JobStatus.Open));
        _onlyClient(jobId, job);
        _cancel(jobId, job);
    }

    /// @inheritdoc IJobEscrow
    function dispute(uint256 jobId) external {
        JobRecord storage job = _jobs[jobId];
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
        JobRecord storage job = _jobs[jobId];
        // Checks: the coordinator's choice is only a hint; every condition is re-checked here.
        if (msg.sender != coordinator) revert JobEscrowNotCoordinator(msg.sender, coordinator);
        _expectStatus(jobId, _bit(JobStatus.Open));
        (uint128 price, , bool active) = registry.quote(provider);
        if (!active) revert JobEscrowProviderInactive(provider);
        if (_fenced[jobId][provider]) revert JobEscrowProviderFenced(jobId, provider);
        if (price > job.maxPricePerStep) revert JobEscrowPriceAboveMax(jobId, price, job.maxPricePerStep);
        _dropLapsed(jobId, job);
        uint256 needed = _budgetNeeded(job, price);
        uint256 available = job.budget - job.paid;
        if (needed > available) revert JobEscrowBudgetShort(jobId, needed, available);
        uint128 lock = _lockFor(price, job.checkpointInterval);
        (uint128 stakeNeeded, uint128 stakeFree) = registry.stakeQuote(provider, jobId, lock);
        if (stakeNeeded > stakeFree) revert JobEscrowStakeShort(jobId, provider, stakeFree, stakeNeeded);
        // Effects
        uint48 epoch = job.epoch + 1;
        job.epoch = epoch;
        job.phase = JobStatus.Running;
        job.provider = provider;
        job.pricePerStep = price;
        uint64 lease = _extendLease(job);
        job.lastProgressAt = uint40(block.timestamp);
        emit ProviderAssigned(jobId, provider, epoch, price, job.acceptedStep, job.acceptedHash, lease);
        // Interactions: the registry is fixed at construction; it emits StakeLocked.
        registry.lockStake(provider, jobId, lock);
    }

    /// @inheritdoc IJobEscrow
    function unassign(uint256 jobId) external {
        JobRecord storage job = _jobs[jobId];
        _expectStatus(jobId, _bit(JobStatus.Running));
        UnassignReason reason = UnassignReason.Coordinator;
        if (msg.sender != coordinator) {
            uint64 lease = _leaseOf(job);
            if (block.timestamp <= lease) revert JobEscrowLeaseActive(jobId, lease, block.timestamp);
            reason = UnassignReason.LeaseLapsed;
        }
        // The coordinator is never trusted with a provider's stake: its unassignment costs a holder on probation
        // its lock only once the holder made no progress for the job's own bound (an objective fact), as a lapsed
        // lease does.
        bool stalled =
            (reason == UnassignReason.LeaseLapsed || block.timestamp > _stalledAfter(job)) && !_timeoutCapped(job);
        address provider = _reopen(jobId, job, reason);
        // A checkpoint of the holder's that lapsed undecided is dropped first (the verifiers' silence: released).
        _dropLapsed(jobId, job);
        if (!stalled) return _releaseIfIdle(jobId, job, provider);
        _endHold(jobId, job, provider, reason == UnassignReason.Coordinator ? HoldEnd.Unassigned : HoldEnd.LeaseLapsed);
    }

    // ------------------------------------------------------------------ provider

    /// @inheritdoc IJobEscrow
    function heartbeat(uint256 jobId, uint64 epoch) external {
        JobRecord storage job = _jobs[jobId];
        _checkAssignee(jobId, job, epoch);
        _checkNotLapsed(jobId, job, epoch);
        // Waiting for the verifiers (bounded by DECISION_TIMEOUT) is not the provider's stall; otherwise it must
        // make progress within its job's timeout.
        if (!_pendingLive(job) && block.timestamp > _stalledAfter(job)) {
            revert JobEscrowNoProgress(jobId, job.lastProgressAt, block.timestamp);
        }
        uint64 lease = _extendLease(job);
        emit LeaseExtended(jobId, msg.sender, epoch, lease);
    }

    /// @inheritdoc IJobEscrow
    function reportCheckpoint(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash) external {
        JobRecord storage job = _jobs[jobId];
        // Checks
        _checkAssignee(jobId, job, epoch);
        if (_pendingLive(job)) revert JobEscrowCheckpointPending(jobId, job.pendingStep);
        _checkNotLapsed(jobId, job, epoch);
        // Summed in 256 bits: two uint32 values near the top of their range would overflow and brick the job.
        uint256 reach = uint256(job.acceptedStep) + job.checkpointInterval;
        uint32 maxStep = reach > job.totalSteps ? job.totalSteps : uint32(reach);
        if (step <= job.acceptedStep || step > maxStep)
            revert JobEscrowInvalidStep(jobId, step, job.acceptedStep, maxStep);
        if (checkpointHash == bytes32(0)) revert JobEscrowZeroHash(jobId);
        // Effects
        _dropLapsed(jobId, job);
        job.pendingStep = step;
        job.pendingHash = checkpointHash;
        job.reportedAt = uint40(block.timestamp);
        job.lastProgressAt = uint40(block.timestamp);
        // Same reporter, epoch and price as the last report: these rewrite equal values (100 gas each).
        job.pendingProvider = msg.sender;
        job.pendingEpoch = uint48(epoch); // equals job.epoch (checked above)
        job.pendingPrice = job.pricePerStep;
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
        JobRecord storage job = _jobs[jobId];
        // Checks
        _checkPending(jobId, job, epoch, step, checkpointHash);
        _authorizeVerifiers(checkpointDecisionDigest(jobId, epoch, step, checkpointHash, true), signatures);
        // Effects: the reporter's price was checked against the remaining budget when it was assigned, and every
        // later assignment reserved budget for this checkpoint too (`_budgetNeeded`).
        uint32 steps = step - job.acceptedStep;
        address provider = job.pendingProvider;
        uint128 amount = uint128(steps) * job.pendingPrice;
        job.paid += amount;
        _earnings[jobId][provider] += amount;
        job.acceptedStep = step;
        job.acceptedHash = checkpointHash;
        _clearPending(job);
        // Real progress: the job's stall clock restarts (Open or Running), and whoever holds the job now was
        // waiting for this decision, so its progress clock restarts too.
        job.stallSince = uint32(block.timestamp);
        if (job.phase == JobStatus.Running) {
            job.lastProgressAt = uint40(block.timestamp);
            _extendLease(job);
        }
        emit CheckpointAccepted(jobId, provider, epoch, step, checkpointHash, steps, amount);
        if (!_proven[provider]) {
            _proven[provider] = true;
            emit ProbationEnded(jobId, provider);
        }
        // Interactions: a reporter that no longer holds the job gets its stake lock back.
        _releaseIfIdle(jobId, job, provider);
    }

    /// @inheritdoc IJobEscrow
    function refuseCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external {
        JobRecord storage job = _jobs[jobId];
        // Checks
        _checkPending(jobId, job, epoch, step, checkpointHash);
        _authorizeVerifiers(checkpointDecisionDigest(jobId, epoch, step, checkpointHash, false), signatures);
        address provider = _refuse(jobId, job, epoch, step, checkpointHash);
        _endHold(jobId, job, provider, HoldEnd.Refused);
    }

    /// @inheritdoc IJobEscrow
    function refuseWithFault(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        Fault calldata fault,
        bytes calldata signatures
    ) external {
        JobRecord storage job = _jobs[jobId];
        // Checks
        _checkPending(jobId, job, epoch, step, checkpointHash);
        if (fault.step <= job.acceptedStep || fault.step > step) {
            revert JobEscrowInvalidFaultStep(jobId, fault.step, job.acceptedStep, step);
        }
        if (fault.committedHash == fault.replayedHash) {
            revert JobEscrowNotAFault(jobId, fault.committedHash, fault.replayedHash);
        }
        if (fault.finder == address(0)) revert JobEscrowZeroAddress();
        _authorizeVerifiers(faultRefusalDigest(jobId, epoch, step, checkpointHash, fault), signatures);
        // Effects
        address provider = _refuse(jobId, job, epoch, step, checkpointHash);
        _slash(jobId, job, provider, fault.step, fault.finder);
    }

    /// @inheritdoc IJobEscrow
    function submitVerdict(
        uint256 jobId,
        bytes32 modelHash,
        uint256 metric,
        bool passed,
        bytes calldata signatures
    ) external {
        JobRecord storage job = _jobs[jobId];
        // Checks: Open too, because a lapsed lease may have unassigned the provider after its last acceptance.
        _expectStatus(jobId, _bit(JobStatus.Open) | _bit(JobStatus.Running));
        if (job.acceptedStep != job.totalSteps) {
            revert JobEscrowTrainingIncomplete(jobId, job.acceptedStep, job.totalSteps);
        }
        if (modelHash != job.acceptedHash) revert JobEscrowVerdictHashMismatch(jobId, modelHash, job.acceptedHash);
        _authorizeVerifiers(verdictDigest(jobId, modelHash, metric, passed), signatures);
        // Effects: the epoch bump fences the provider; training is over.
        job.phase = JobStatus.DisputeWindow;
        uint48 epoch = job.epoch + 1;
        job.epoch = epoch;
        // The model hash is the accepted hash (checked above): only the metric, the outcome and the time are new.
        job.verdictPassed = passed;
        job.verdictAt = uint40(block.timestamp);
        job.pendingHash = bytes32(metric);
        emit VerdictSubmitted(jobId, modelHash, metric, passed, uint64(block.timestamp) + job.disputeWindow, epoch);
        // Interactions: training is over; the last holder's stake lock comes back (no checkpoint can be pending).
        _releaseIfIdle(jobId, job, job.provider);
    }

    // ------------------------------------------------------------------ arbiter

    /// @inheritdoc IJobEscrow
    function resolveDispute(uint256 jobId, bool upheld) external {
        JobRecord storage job = _jobs[jobId];
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
        JobRecord storage job = _jobs[jobId];
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
    function expire(uint256 jobId) external {
        JobRecord storage job = _jobs[jobId];
        // Open only: a holder is unassigned first (lease lapsed, refused, or by the coordinator), and since
        // reopening leaves the stall clock alone, the job is expirable the moment it is Open again.
        _expectStatus(jobId, _bit(JobStatus.Open));
        // stallSince keeps the low 32 bits of its time: the time since it, modulo 2^32, stays right past 2106.
        uint32 stalledFor;
        unchecked {
            stalledFor = uint32(block.timestamp) - job.stallSince;
        }
        uint64 expiresAt = uint64(block.timestamp) - stalledFor + STALL_EXPIRY;
        if (block.timestamp <= expiresAt) revert JobEscrowNotExpired(jobId, expiresAt, block.timestamp);
        emit JobExpired(jobId, job.budget - job.paid, msg.sender);
        _cancel(jobId, job);
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
    function isProven(address provider) external view returns (bool) {
        return _proven[provider];
    }

    /// @inheritdoc IJobEscrow
    function isApprovedTemplate(bytes32 templateId) external view returns (bool) {
        return _templates[templateId].approved;
    }

    /// @inheritdoc IJobEscrow
    function templateStepBound(bytes32 templateId) external view returns (uint16) {
        uint16 stepMillis = _templates[templateId].stepMillis;
        return stepMillis == 0 ? uint16(MAX_SECONDS_PER_STEP * 1000) : stepMillis;
    }

    /// @inheritdoc IJobEscrow
    function statusOf(uint256 jobId) public view returns (JobStatus) {
        JobRecord storage job = _jobs[jobId];
        JobStatus phase = job.phase;
        if (phase == JobStatus.DisputeWindow) {
            uint256 deadline = uint256(job.verdictAt) + job.disputeWindow;
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
        Job memory j;
        JobRecord storage job = _jobs[jobId];
        if (job.phase == JobStatus.None) return j;
        j.client = job.client;
        j.epoch = job.epoch;
        j.phase = job.phase;
        j.templateId = _templateIds[job.template];
        j.seed = _seedOf(jobId, job.client);
        j.totalSteps = job.totalSteps;
        j.checkpointInterval = job.checkpointInterval;
        j.acceptedStep = job.acceptedStep;
        j.leaseExpiresAt = _leaseOf(job);
        j.disputeWindow = job.disputeWindow;
        j.provider = job.provider;
        j.lastProgressAt = job.lastProgressAt;
        j.progressTimeout = _progressTimeout(job);
        j.stallSince = job.stallSince;
        j.pricePerStep = job.pricePerStep;
        j.maxPricePerStep = job.maxPricePerStep;
        j.budget = job.budget;
        j.paid = job.paid;
        j.acceptedHash = job.acceptedHash;
        if (job.pendingStep != 0) _pendingInto(j, job);
        return j;
    }

    /// @dev The pending checkpoint's fields, shown only while one is pending (they stay in storage after it).
    function _pendingInto(Job memory j, JobRecord storage job) private view {
        j.pendingStep = job.pendingStep;
        j.pendingProvider = job.pendingProvider;
        j.pendingEpoch = job.pendingEpoch;
        j.pendingPrice = job.pendingPrice;
        j.reportedAt = job.reportedAt;
        j.pendingHash = job.pendingHash;
    }

    /// @inheritdoc IJobEscrow
    function verdictOf(uint256 jobId) external view returns (Verdict memory) {
        JobRecord storage job = _jobs[jobId];
        if (job.verdictAt == 0) return Verdict(0, 0, false, 0);
        return Verdict(job.acceptedHash, uint256(job.pendingHash), job.verdictPassed, job.verdictAt);
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
        (uint256 stakeHeld, uint256 stakes) = registry.reserves();
        return (token.balanceOf(address(this)) + stakeHeld, totalLocked + totalBonds + totalWithdrawable + stakes);
    }

    // ------------------------------------------------------------------ internals

    function _createJob(JobRequest calldata request) private returns (uint256 jobId) {
        // Checks
        Template storage template = _templates[request.templateId];
        if (!template.approved) revert JobEscrowTemplateNotApproved(request.templateId);
        if (
            request.totalSteps == 0 ||
            request.checkpointInterval == 0 ||
            request.checkpointInterval > request.totalSteps
        ) revert JobEscrowInvalidSteps(request.totalSteps, request.checkpointInterval);
        if (request.maxPricePerStep == 0 || request.budget == 0) revert JobEscrowZeroAmount();
        if (request.disputeWindow < MIN_DISPUTE_WINDOW || request.disputeWindow > MAX_DISPUTE_WINDOW) {
            revert JobEscrowInvalidDisputeWindow(request.disputeWindow, MIN_DISPUTE_WINDOW, MAX_DISPUTE_WINDOW);
        }
        // Effects
        jobId = ++jobCount;
        bytes32 seed = _seedOf(jobId, msg.sender);
        JobRecord storage job = _jobs[jobId];
        job.client = msg.sender;
        job.phase = JobStatus.Open;
        job.template = template.index;
        uint16 stepMillis = template.stepMillis;
        job.stepMillis = stepMillis == 0 ? uint16(MAX_SECONDS_PER_STEP * 1000) : stepMillis;
        job.totalSteps = request.totalSteps;
        job.checkpointInterval = request.checkpointInterval;
        job.disputeWindow = uint32(request.disputeWindow); // at most MAX_DISPUTE_WINDOW (checked above)
        job.maxPricePerStep = request.maxPricePerStep;
        job.budget = request.budget;
        job.stallSince = uint32(block.timestamp);
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

    function _reopen(uint256 jobId, JobRecord storage job, UnassignReason reason) private returns (address provider) {
        provider = job.provider;
        uint48 epoch = job.epoch + 1;
        job.epoch = epoch;
        job.phase = JobStatus.Open;
        job.provider = address(0);
        job.pricePerStep = 0;
        job.liveAt = 0;
        job.lastProgressAt = 0;
        // The stall clock is left alone: reopening is no progress (a job bouncing Running ↔ Open still expires).
        emit ProviderUnassigned(jobId, provider, epoch, reason, msg.sender);
    }

    /// @dev Fences the pending checkpoint's reporter, drops the checkpoint, and reopens the job if the reporter
    /// holds it. Returns the reporter; its stake lock is the caller's to release or slash.
    function _refuse(
        uint256 jobId,
        JobRecord storage job,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash
    ) private returns (address provider) {
        provider = job.pendingProvider;
        _fenced[jobId][provider] = true;
        _clearPending(job);
        emit CheckpointRefused(jobId, provider, epoch, step, checkpointHash);
        if (job.phase != JobStatus.Running) return provider;
        if (job.provider == provider) {
            _reopen(jobId, job, UnassignReason.Refused);
        } else {
            // Another provider holds the job and was waiting for this decision: its progress clock restarts (as on
            // an acceptance), or a late refusal would leave it past its timeout before it could report.
            job.lastProgressAt = uint40(block.timestamp);
        }
    }

    /// @dev Books the split of `provider`'s lock on the job and voids its unclaimed earnings there, then has the
    /// registry (fixed at construction) send exactly that lock here: effects first, the one interaction last.
    function _slash(uint256 jobId, JobRecord storage job, address provider, uint32 faultStep, address finder) private {
        uint128 slashed = registry.lockOf(provider, jobId);
        uint128 voided = _earnings[jobId][provider];
        _earnings[jobId][provider] = 0;
        job.paid -= voided;
        uint128 toClient = uint128((uint256(slashed) * CLIENT_SHARE_BPS) / 10_000);
        uint128 toFinder = uint128((uint256(slashed) * FINDER_SHARE_BPS) / 10_000);
        uint128 toFee = slashed - toClient - toFinder;
        _withdrawable[job.client] += toClient;
        _withdrawable[finder] += toFinder;
        _withdrawable[feeRecipient] += toFee;
        totalWithdrawable += slashed;
        emit ProviderSlashed(jobId, provider, faultStep, finder, slashed, toClient, toFinder, toFee, voided);
        registry.slashStake(provider, jobId);
    }

    function _cancel(uint256 jobId, JobRecord storage job) private {
        if (_pendingLive(job)) revert JobEscrowCheckpointPending(jobId, job.pendingStep);
        _dropLapsed(jobId, job);
        job.phase = JobStatus.Cancelled;
        uint128 refund = job.budget - job.paid;
        _release(job.client, refund);
        emit JobCancelled(jobId, refund);
    }

    /// @dev Drops a pending checkpoint whose decision window closed, and returns its reporter's stake lock if the
    /// reporter no longer holds the job. Never a forfeit: an undecided checkpoint is the verifiers' (or the
    /// store's) failure to decide, not evidence against its reporter.
    function _dropLapsed(uint256 jobId, JobRecord storage job) private {
        if (job.pendingStep == 0 || _pendingLive(job)) return;
        address provider = job.pendingProvider;
        emit CheckpointLapsed(jobId, provider, job.pendingEpoch, job.pendingStep, job.pendingHash);
        _clearPending(job);
        _releaseIfIdle(jobId, job, provider);
    }

    /// @dev Only the step goes to 0: the other pending fields stay as they are (no slot is zeroed and set again
    /// at the next report) and are read only while `pendingStep` is nonzero.
    function _clearPending(JobRecord storage job) private {
        job.pendingStep = 0;
    }

    /// @dev Releases `provider`'s stake lock on the job unless it still holds the job or has a decidable
    /// checkpoint on it. Safe to repeat: the registry ignores a release without a lock.
    function _releaseIfIdle(uint256 jobId, JobRecord storage job, address provider) private {
        if (_holding(job, provider)) return;
        registry.releaseStake(provider, jobId);
    }

    /// @dev A hold that ended without an accepted checkpoint: a proven provider's lock comes back (an honest crash
    /// costs it only the unaccepted work); a provider on probation forfeits it to the client for the delay. Safe to
    /// repeat: without a lock nothing moves.
    function _endHold(uint256 jobId, JobRecord storage job, address provider, HoldEnd how) private {
        if (_holding(job, provider)) return;
        if (_proven[provider]) return registry.releaseStake(provider, jobId);
        uint128 amount = registry.lockOf(provider, jobId);
        if (amount == 0) return;
        _withdrawable[job.client] += amount;
        totalWithdrawable += amount;
        emit HoldForfeited(jobId, provider, amount, how);
        // Interactions: the registry (fixed at construction) sends exactly that lock here.
        registry.forfeitStake(provider, jobId);
    }

    /// @dev Whether `provider` still holds the job or has a decidable checkpoint on it (its lock stays).
    function _holding(JobRecord storage job, address provider) private view returns (bool) {
        if (provider == address(0)) return true;
        if (job.phase == JobStatus.Running && job.provider == provider) return true;
        return job.pendingProvider == provider && _pendingLive(job);
    }

    function _pendingLive(JobRecord storage job) private view returns (bool) {
        return job.pendingStep != 0 && block.timestamp <= uint256(job.reportedAt) + DECISION_TIMEOUT;
    }

    /// @dev Budget a new assignment must find: the remaining steps at its price, or, while another provider's
    /// checkpoint is still decidable, that checkpoint at its reporter's price plus the steps after it.
    function _budgetNeeded(JobRecord storage job, uint128 price) private view returns (uint256 needed) {
        needed = uint256(job.totalSteps - job.acceptedStep) * price;
        if (job.pendingStep == 0) return needed;
        uint256 withPending =
            uint256(job.pendingStep - job.acceptedStep) * job.pendingPrice +
                uint256(job.totalSteps - job.pendingStep) * price;
        if (withPending > needed) needed = withPending;
    }

    /// @dev price × checkpointInterval: what one checkpoint pays, so what fabricating one could win at most.
    function _lockFor(uint128 price, uint32 interval) private pure returns (uint128) {
        uint256 lock = uint256(price) * interval;
        return lock > type(uint128).max ? type(uint128).max : uint128(lock);
    }

    /// @dev interval × the job's step bound (rounded up to a second), at least one lease, at most PROGRESS_TIMEOUT.
    function _progressTimeout(JobRecord storage job) private view returns (uint64) {
        uint256 timeout = (uint256(job.checkpointInterval) * job.stepMillis + 999) / 1000;
        if (timeout < leaseDuration) return leaseDuration;
        return timeout > PROGRESS_TIMEOUT ? PROGRESS_TIMEOUT : uint64(timeout);
    }

    /// @dev When the holder's stall begins to count: its last progress plus the job's timeout, where a checkpoint
    /// still pending (decidable or lapsed undecided) stops the clock until its decision window closed. The holder
    /// cannot report while one is decidable, so that time is the verifiers', not its own.
    function _stalledAfter(JobRecord storage job) private view returns (uint256) {
        uint256 since = job.lastProgressAt;
        if (job.pendingStep != 0) {
            uint256 closed = uint256(job.reportedAt) + DECISION_TIMEOUT;
            if (closed > since) since = closed;
        }
        return since + _progressTimeout(job);
    }

    /// @dev Whether PROGRESS_TIMEOUT cut the job's progress timeout below what its interval needs at its step
    /// bound: then a holder within the bound may not report in time, and its stall is no evidence.
    function _timeoutCapped(JobRecord storage job) private view returns (bool) {
        return uint256(job.checkpointInterval) * job.stepMillis > uint256(PROGRESS_TIMEOUT) * 1000;
    }

    /// @dev The template's record, given an index at first use (approval or step bound).
    function _templateRecord(bytes32 templateId) private returns (Template storage t) {
        if (templateId == bytes32(0)) revert JobEscrowZeroTemplate();
        t = _templates[templateId];
        if (t.index != 0) return t;
        uint32 index = ++_templateCount;
        t.index = index;
        _templateIds[index] = templateId;
    }

    /// @dev Releases the client's refund (and the bond, whichever way it goes). Providers claim their earnings
    /// one by one afterwards, so settling never loops over providers.
    function _settle(uint256 jobId, JobRecord storage job, uint128 bondReturned, uint128 bondForfeited) private {
        job.phase = JobStatus.Settled;
        uint128 refund = job.budget - job.paid;
        uint128 bond = bondReturned + bondForfeited;
        // Without a dispute there is no bond, and a budget spent to the last unit leaves no refund: zero
        // movements are skipped rather than written (each would read and rewrite a cold slot).
        if (bond != 0) {
            totalBonds -= bond;
            totalWithdrawable += bond;
            _withdrawable[job.client] += bondReturned;
            _withdrawable[feeRecipient] += bondForfeited;
        }
        if (refund != 0) _release(job.client, refund);
        emit JobSettled(jobId, refund, job.paid, bondReturned, bondForfeited);
    }

    function _release(address account, uint128 amount) private {
        totalLocked -= amount;
        totalWithdrawable += amount;
        _withdrawable[account] += amount;
    }

    function _extendLease(JobRecord storage job) private returns (uint64 lease) {
        lease = uint64(block.timestamp) + leaseDuration;
        job.liveAt = uint40(block.timestamp);
    }

    /// @dev The assignee is live until this instant (inclusive); 0 when Open.
    function _leaseOf(JobRecord storage job) private view returns (uint64) {
        uint40 liveAt = job.liveAt;
        return liveAt == 0 ? 0 : liveAt + leaseDuration;
    }

    /// @dev The data-order seed: fixed by the chain, the escrow, the job and its client, so it is not stored.
    function _seedOf(uint256 jobId, address client) private view returns (bytes32) {
        return keccak256(abi.encode(block.chainid, address(this), jobId, client));
    }

    function _checkAssignee(uint256 jobId, JobRecord storage job, uint64 epoch) private view {
        if (epoch != job.epoch) revert JobEscrowStaleEpoch(jobId, epoch, job.epoch);
        _expectStatus(jobId, _bit(JobStatus.Running));
        if (msg.sender != job.provider) revert JobEscrowNotAssignee(jobId, msg.sender, job.provider);
        uint64 lease = _leaseOf(job);
        if (block.timestamp > lease) revert JobEscrowLeaseLapsed(jobId, lease, block.timestamp);
    }

    /// @dev The assignee's own checkpoint of this epoch lapsed undecided: its hold is over, it must not report or
    /// beat again in the epoch (it would hold the job another decision window at no cost).
    function _checkNotLapsed(uint256 jobId, JobRecord storage job, uint64 epoch) private view {
        if (job.pendingStep != 0 && job.pendingEpoch == epoch && !_pendingLive(job)) {
            revert JobEscrowReportLapsed(jobId, epoch, job.pendingStep);
        }
    }

    function _checkPending(
        uint256 jobId,
        JobRecord storage job,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash
    ) private view {
        _expectStatus(jobId, _bit(JobStatus.Open) | _bit(JobStatus.Running));
        if (
            job.pendingStep == 0 ||
            epoch != job.pendingEpoch ||
            step != job.pendingStep ||
            checkpointHash != job.pendingHash
        ) revert JobEscrowNoSuchPendingCheckpoint(jobId, epoch, step, checkpointHash);
        uint64 deadline = job.reportedAt + DECISION_TIMEOUT;
        if (block.timestamp > deadline) revert JobEscrowDecisionWindowClosed(jobId, deadline, block.timestamp);
    }

    function _onlyClient(uint256 jobId, JobRecord storage job) private view {
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
