// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {VM, bound} from "../../fuzz/utils/Bound.sol";
import {ProtocolSetup} from "../../fuzz/utils/ProtocolSetup.sol";
import {EscrowStore} from "./EscrowStore.sol";

IJobEscrow.JobStatus constant NONE = IJobEscrow.JobStatus.None;
IJobEscrow.JobStatus constant OPEN = IJobEscrow.JobStatus.Open;
IJobEscrow.JobStatus constant RUNNING = IJobEscrow.JobStatus.Running;
IJobEscrow.JobStatus constant DISPUTE_WINDOW = IJobEscrow.JobStatus.DisputeWindow;
IJobEscrow.JobStatus constant SETTLEABLE = IJobEscrow.JobStatus.Settleable;
IJobEscrow.JobStatus constant DISPUTED = IJobEscrow.JobStatus.Disputed;
IJobEscrow.JobStatus constant ARBITER_TIMED_OUT = IJobEscrow.JobStatus.ArbiterTimedOut;
IJobEscrow.JobStatus constant SETTLED = IJobEscrow.JobStatus.Settled;
IJobEscrow.JobStatus constant CANCELLED = IJobEscrow.JobStatus.Cancelled;

function bit(IJobEscrow.JobStatus status) pure returns (uint256) {
    return 1 << uint8(status);
}

/// @notice What every action family of the escrow handler shares: the deployed contracts, the actors, the
/// handler's clock, the reference model's rules and the one way a call is made and judged (`_call`).
/// @dev The action families (ClientActions, ProviderActions, CoordinatorActions, VerifierActions,
/// SettlementActions) each add the calls of one role; EscrowHandler puts them together and deploys.
abstract contract HandlerBase is EscrowStore, ProtocolSetup {
    /// @dev What an action looks for in a job (see `_pickJob`).
    enum Fit {
        Any,
        Open,
        Assignable, // Open, and some provider is eligible
        Stuck, // Open, nothing decidable, and no provider is eligible (what a client would cancel)
        Running,
        Live, // Running with a live lease
        Reportable, // Live, nothing decidable, steps left
        Pending, // Open or Running with a checkpoint still decidable
        Fabricated, // Pending, and its reporter made it up
        Expirable, // Open, and no acceptance (nor creation) for longer than STALL_EXPIRY
        Trained, // Open or Running with every step accepted
        InDisputeWindow,
        Disputed,
        Settleable, // Settleable or ArbiterTimedOut
        Claimable // final, not upheld, some provider has unclaimed earnings
    }

    uint256 public constant N_CLIENTS = 3;
    uint256 public constant N_PROVIDERS = 4;
    uint128 public constant MIN_STAKE = 1_000;
    uint64 public constant DECISION_TIMEOUT = 1 hours;
    uint64 public constant STALL_EXPIRY = 7 days;
    uint64 public constant MAX_SECONDS_PER_STEP = 30;
    uint64 public constant PROGRESS_CAP = 6 hours;
    uint256 public constant N_VERIFIERS = 3;

    address[N_CLIENTS] internal _clients = [address(0xC1100001), address(0xC1100002), address(0xC1100003)];
    address[N_PROVIDERS] internal _providers = [
        address(0x9A000001),
        address(0x9A000002),
        address(0x9A000003),
        address(0x9A000004)
    ];
    /// @dev The verifiers that may be named as a fault's finder (they receive the bounty).
    address[N_VERIFIERS] internal _verifiers = [address(0xF1D00001), address(0xF1D00002), address(0xF1D00003)];

    /// @notice At most this many jobs: 4 at the CI depth (100), so that a run's calls concentrate on few jobs and
    /// get them through their whole lifecycle; more for deeper runs (depth / 25, up to 20).
    uint256 public maxJobs;
    /// @notice The handler's clock (see `warp`).
    uint256 public currentTime;

    /// @dev Every action but `warp`: it runs at the handler's clock, and its call is counted.
    modifier action(bytes32 name) {
        VM.warp(currentTime);
        ghost_calls[name] += 1;
        _;
    }

    modifier instrument(bytes32 name) {
        ghost_calls[name] += 1;
        _;
    }

    /// @dev The one shape of every action's call: made as `caller` (none: as the handler, i.e. the verifier Safe),
    /// judged against the model's prediction. True when it succeeded as predicted: the action then applies the
    /// spec's effects to the model. A success or revert against the prediction is counted as unexpected.
    function _call(
        address caller,
        address target,
        bytes memory data,
        bool expected,
        string memory what
    ) internal returns (bool ok) {
        (ok, ) = _rawCall(caller, target, data);
        if (ok != expected) _unexpected(string.concat(what, ok ? " succeeded" : " reverted"));
        return ok && expected;
    }

    function _rawCall(
        address caller,
        address target,
        bytes memory data
    ) internal returns (bool ok, bytes memory result) {
        if (caller != address(this)) VM.prank(caller);
        (ok, result) = target.call(data);
    }

    /// @dev Counts `what` as a success once more (coverage, not asserted).
    function _succeeded(bytes32 what) internal {
        ghost_successes[what] += 1;
    }

    /// @dev Re-reads the job from the escrow: epochs never decrease, statuses only move along the lifecycle and
    /// never leave Settled or Cancelled, and the escrow agrees with the model.
    function _record(uint256 jobId) internal {
        IJobEscrow.Job memory job = escrow.jobOf(jobId);
        IJobEscrow.JobStatus status = escrow.statusOf(jobId);
        if (job.epoch < ghost_lastEpoch[jobId]) ghost_epochDecreases += 1;
        IJobEscrow.JobStatus last = ghost_lastStatus[jobId];
        if (status != last) {
            if (last == SETTLED || last == CANCELLED) ghost_terminalStatusChanges += 1;
            if (_allowedNext(last) & bit(status) == 0) ghost_illegalTransitions += 1;
        }
        ghost_lastEpoch[jobId] = job.epoch;
        ghost_lastStatus[jobId] = status;

        GhostJob storage g = _ghostJobs[jobId];
        if (status != _status(g)) _unexpected("model: status");
        if (job.epoch != g.epoch) _unexpected("model: epoch");
        if (job.acceptedStep != g.accepted || job.acceptedHash != g.acceptedHash) _unexpected("model: accepted");
        if (job.pendingStep != g.pending || job.pendingHash != g.pendingHash) _unexpected("model: pending");
        if (job.paid != (g.upheld ? 0 : g.paid)) _unexpected("model: paid");
        if (status == RUNNING && (job.provider != g.assignee || job.leaseExpiresAt != g.lease)) {
            _unexpected("model: assignee or lease");
        }
        if (status == RUNNING && job.lastProgressAt != g.progress) _unexpected("model: last progress");
        if (job.budget != g.budget || job.client != g.client) _unexpected("model: budget or client");
        if (job.pendingProvider != g.pendingProvider || job.pendingEpoch != g.pendingEpoch) {
            _unexpected("model: pending reporter or epoch");
        }
        if (job.pendingPrice != g.pendingPrice || job.reportedAt != g.reportedAt) _unexpected("model: pending price");
        if (job.progressTimeout != g.progressTimeout || job.stallSince != g.stallSince) {
            _unexpected("model: progress timeout or open since");
        }
        for (uint256 i = 0; i < N_PROVIDERS; ++i) {
            if (registry.lockOf(_providers[i], jobId) != ghost_lock[jobId][_providers[i]]) _unexpected("model: lock");
        }
    }

    /// @dev The lifecycle as a transition table: what each status may become in one call or one time warp.
    function _allowedNext(IJobEscrow.JobStatus from) internal pure returns (uint256) {
        if (from == NONE) return bit(OPEN);
        if (from == OPEN) return bit(RUNNING) | bit(CANCELLED) | bit(DISPUTE_WINDOW);
        if (from == RUNNING) return bit(OPEN) | bit(DISPUTE_WINDOW);
        if (from == DISPUTE_WINDOW) return bit(SETTLEABLE) | bit(DISPUTED);
        if (from == SETTLEABLE) return bit(SETTLED);
        if (from == DISPUTED) return bit(ARBITER_TIMED_OUT) | bit(SETTLED);
        if (from == ARBITER_TIMED_OUT) return bit(SETTLED);
        return 0; // Settled and Cancelled are final
    }

    /// @dev The model's status: stored phase, with the two clock-derived ones (deadlines inclusive).
    function _status(GhostJob storage g) internal view returns (IJobEscrow.JobStatus) {
        if (g.phase == DISPUTE_WINDOW && currentTime > uint256(g.verdictAt) + g.disputeWindow) return SETTLEABLE;
        if (g.phase == DISPUTED && currentTime > uint256(g.disputedAt) + ARBITER_TIMEOUT) return ARBITER_TIMED_OUT;
        return g.phase;
    }

    function _isLiveAssignee(GhostJob storage g, address sender, uint64 epoch) internal view returns (bool) {
        return _status(g) == RUNNING && sender == g.assignee && epoch == g.epoch && currentTime <= g.lease;
    }

    /// @dev The holder leaves; a pending checkpoint stays its reporter's (decidable until its window closes).
    function _reopen(GhostJob storage g) internal {
        g.phase = OPEN;
        g.epoch += 1;
        g.assignee = address(0);
        g.price = 0;
        g.lease = 0;
        g.progress = 0;
    }

    function _clearPending(GhostJob storage g) internal {
        g.pending = 0;
        g.pendingHash = bytes32(0);
        g.pendingProvider = address(0);
        g.pendingEpoch = 0;
        g.pendingPrice = 0;
        g.reportedAt = 0;
        g.pendingFabricated = false;
    }

    /// @dev The spec: the holder's stall counts from its last progress plus the job's timeout, a pending checkpoint
    /// (decidable or lapsed undecided) stopping the clock until its decision window closed.
    function _stalledAfter(GhostJob storage g) internal view returns (uint256) {
        uint256 since = g.progress;
        if (g.pending != 0 && uint256(g.reportedAt) + DECISION_TIMEOUT > since) {
            since = uint256(g.reportedAt) + DECISION_TIMEOUT;
        }
        return since + g.progressTimeout;
    }

    function _pendingLive(GhostJob storage g) internal view returns (bool) {
        return g.pending != 0 && currentTime <= uint256(g.reportedAt) + DECISION_TIMEOUT;
    }

    /// @dev Whether the Safe may still decide the job's pending checkpoint (Open or Running, inside its window).
    function _decidable(GhostJob storage g) internal view returns (bool) {
        IJobEscrow.JobStatus status = _status(g);
        return (status == OPEN || status == RUNNING) && _pendingLive(g);
    }

    /// @dev A pending checkpoint whose decision window closed is dropped by the next assign, report or cancel.
    function _dropLapsed(uint256 jobId, GhostJob storage g) internal {
        if (g.pending == 0 || _pendingLive(g)) return;
        address reporter = g.pendingProvider;
        _clearPending(g);
        _releaseIfIdle(jobId, g, reporter); // undecided is the verifiers' failure: never a forfeit
        _succeeded("lapsedCheckpoints");
    }

    /// @dev The spec's release rule: a provider's lock on a job comes back once it neither holds the job nor has
    /// a decidable checkpoint on it.
    function _releaseIfIdle(uint256 jobId, GhostJob storage g, address provider) internal {
        if (provider == address(0)) return;
        if (g.phase == RUNNING && g.assignee == provider) return;
        if (g.pendingProvider == provider && _pendingLive(g)) return;
        _ghostStakes[provider].locked -= ghost_lock[jobId][provider];
        ghost_lock[jobId][provider] = 0;
    }

    /// @dev The spec's probation rule: a hold that ended without an accepted checkpoint returns a proven provider's
    /// lock and forfeits a newcomer's to the job's client (only once it neither holds nor has a decidable report).
    function _endHold(uint256 jobId, GhostJob storage g, address provider) internal {
        if (provider == address(0) || ghost_proven[provider]) return _releaseIfIdle(jobId, g, provider);
        if (g.phase == RUNNING && g.assignee == provider) return;
        if (g.pendingProvider == provider && _pendingLive(g)) return;
        uint128 amount = ghost_lock[jobId][provider];
        GhostStake storage st = _ghostStakes[provider];
        st.deposited -= amount;
        st.locked -= amount;
        ghost_lock[jobId][provider] = 0;
        ghost_stakeForfeited += amount;
        ghost_owed[g.client] += amount;
        if (amount != 0) _succeeded("probationForfeits");
    }

    /// @dev The holder's own report of this epoch lapsed undecided: its hold is over (no report, no beat).
    function _ownReportLapsed(GhostJob storage g, uint64 epoch) internal view returns (bool) {
        return g.pending != 0 && g.pendingEpoch == epoch && !_pendingLive(g);
    }

    /// @dev What a lock for `price` on the job still needs from the provider: max(MIN_STAKE, price × interval)
    /// less the lock it already has there.
    function _stakeNeeded(uint256 jobId, address provider, uint128 price) internal view returns (uint128) {
        uint256 target = uint256(price) * _ghostJobs[jobId].interval;
        if (target < MIN_STAKE) target = MIN_STAKE;
        uint128 current = ghost_lock[jobId][provider];
        return target > current ? uint128(target) - current : 0;
    }

    function _freeStake(address provider) internal view returns (uint128) {
        GhostStake storage st = _ghostStakes[provider];
        return st.deposited - st.locked - st.unbonding;
    }

    /// @dev The spec: interval × the step bound, rounded up to a second, at least one lease, at most the cap.
    function _progressTimeout(uint32 interval, uint16 stepMillis) internal pure returns (uint64) {
        uint256 timeout = (uint256(interval) * stepMillis + 999) / 1000;
        if (timeout < LEASE) return LEASE;
        return timeout > PROGRESS_CAP ? PROGRESS_CAP : uint64(timeout);
    }

    /// @dev Whether the cap cut the job's timeout below what its interval needs at its bound (then no evidence).
    function _timeoutCapped(GhostJob storage g) internal view returns (bool) {
        return uint256(g.interval) * g.stepMillis > uint256(PROGRESS_CAP) * 1000;
    }

    /// @dev The step bound a job created now takes.
    function _currentStepMillis() internal view returns (uint16) {
        return ghost_stepMillis == 0 ? uint16(MAX_SECONDS_PER_STEP * 1000) : ghost_stepMillis;
    }

    function _maxStep(GhostJob storage g) internal view returns (uint32) {
        uint32 maxStep = g.accepted + g.interval;
        return maxStep > g.totalSteps ? g.totalSteps : maxStep;
    }

    /// @dev Checks that `account`'s withdrawable balance grew by exactly `amount`, and books it in the model.
    function _credit(address account, uint256 owedBefore, uint256 amount, string memory what) internal {
        if (escrow.owed(account) != owedBefore + amount) _unexpected(what);
        ghost_owed[account] += amount;
    }

    function _staleWriteSucceeded(string memory what) internal {
        ghost_staleWritesSucceeded += 1;
        _unexpected(string.concat(what, ": stale write succeeded"));
    }

    function _forgedDecisionSucceeded(string memory what) internal {
        ghost_forgedDecisionsSucceeded += 1;
        _unexpected(string.concat(what, ": forged decision succeeded"));
    }

    /// @dev A job chosen by `seed`. Seven times in eight it prefers, scanning from there, a job on which the action
    /// can succeed (`fit`), so that random sequences get jobs through their whole lifecycle; otherwise (and when
    /// none fits) the plain pick stands, so that calls in the wrong status are exercised too. 0: no job yet.
    /// Returns the job's model too.
    function _pickJob(uint256 seed, Fit fit) internal view returns (uint256 jobId, GhostJob storage g) {
        jobId = _pickJobId(seed, fit);
        g = _ghostJobs[jobId];
    }

    function _pickJobId(uint256 seed, Fit fit) private view returns (uint256) {
        uint256 n = ghost_jobCount;
        if (n == 0) return 0;
        uint256 start = (seed / 8) % n;
        if (seed % 8 == 7 || fit == Fit.Any) return start + 1;
        for (uint256 i = 0; i < n; ++i) {
            uint256 jobId = ((start + i) % n) + 1;
            if (_fits(jobId, fit)) return jobId;
        }
        return start + 1;
    }

    function _fits(uint256 jobId, Fit fit) internal view returns (bool) {
        GhostJob storage g = _ghostJobs[jobId];
        IJobEscrow.JobStatus status = _status(g);
        if (fit == Fit.Open) return status == OPEN;
        if (fit == Fit.Assignable) {
            if (status != OPEN) return false;
            for (uint256 i = 0; i < N_PROVIDERS; ++i) {
                if (_eligible(jobId, _providers[i])) return true;
            }
            return false;
        }
        if (fit == Fit.Stuck) return status == OPEN && !_pendingLive(g) && !_fits(jobId, Fit.Assignable);
        if (fit == Fit.Running) return status == RUNNING;
        if (fit == Fit.Live) return status == RUNNING && currentTime <= g.lease;
        if (fit == Fit.Reportable) {
            return status == RUNNING && currentTime <= g.lease && !_pendingLive(g) && g.accepted < g.totalSteps;
        }
        if (fit == Fit.Pending) return _decidable(g);
        if (fit == Fit.Fabricated) return _fits(jobId, Fit.Pending) && g.pendingFabricated;
        if (fit == Fit.Expirable) return status == OPEN && currentTime > uint256(g.stallSince) + STALL_EXPIRY;
        if (fit == Fit.Trained) return (status == OPEN || status == RUNNING) && g.accepted == g.totalSteps;
        if (fit == Fit.InDisputeWindow) return status == DISPUTE_WINDOW;
        if (fit == Fit.Disputed) return status == DISPUTED;
        if (fit == Fit.Settleable) return status == SETTLEABLE || status == ARBITER_TIMED_OUT;
        if (fit == Fit.Claimable) {
            if ((status != SETTLED && status != CANCELLED) || g.upheld) return false;
            for (uint256 i = 0; i < N_PROVIDERS; ++i) {
                if (ghost_earned[jobId][_providers[i]] > ghost_claimed[jobId][_providers[i]]) return true;
            }
            return false;
        }
        return true;
    }

    /// @dev Whether the spec lets the coordinator assign `provider` to the (Open) job.
    function _eligible(uint256 jobId, address provider) internal view returns (bool) {
        GhostJob storage g = _ghostJobs[jobId];
        GhostProvider storage p = ghost_providers[provider];
        return
            p.active &&
            !ghost_fenced[jobId][provider] &&
            p.price <= g.maxPrice &&
            _budgetNeeded(g, p.price) <= g.budget - g.paid &&
            _stakeNeeded(jobId, provider, p.price) <= _freeStake(provider);
    }

    /// @dev The remaining steps at `price`, or, while a checkpoint is still decidable, that checkpoint at its
    /// reporter's price plus the steps after it at `price` (whichever is more). Lapsed ones are dropped first.
    function _budgetNeeded(GhostJob storage g, uint128 price) internal view returns (uint256 needed) {
        needed = uint256(g.totalSteps - g.accepted) * price;
        if (!_pendingLive(g)) return needed;
        uint256 withPending =
            uint256(g.pending - g.accepted) * g.pendingPrice + uint256(g.totalSteps - g.pending) * price;
        if (withPending > needed) needed = withPending;
    }

    /// @dev A provider chosen by `seed`; seven times in eight the first eligible one from there, if any.
    function _pickProvider(uint256 jobId, uint256 seed) internal view returns (address) {
        uint256 start = (seed / 8) % N_PROVIDERS;
        if (seed % 8 == 7) return _providers[start];
        for (uint256 i = 0; i < N_PROVIDERS; ++i) {
            address provider = _providers[(start + i) % N_PROVIDERS];
            if (_eligible(jobId, provider)) return provider;
        }
        return _providers[start];
    }

    uint256 internal constant N_ACTORS = N_CLIENTS + N_PROVIDERS + N_VERIFIERS + 2;

    /// @dev Any of the accounts that take part (clients, providers, verifiers, fee recipient, a stranger).
    function _actor(uint256 seed) internal view returns (address) {
        uint256 i = seed % N_ACTORS;
        if (i < N_CLIENTS) return _clients[i];
        if (i < N_CLIENTS + N_PROVIDERS) return _providers[i - N_CLIENTS];
        if (i < N_CLIENTS + N_PROVIDERS + N_VERIFIERS) return _verifiers[i - N_CLIENTS - N_PROVIDERS];
        return i == N_ACTORS - 2 ? FEE_RECIPIENT : STRANGER;
    }

    function _max(uint32 a, uint32 b) internal pure returns (uint32) {
        return a > b ? a : b;
    }
}
