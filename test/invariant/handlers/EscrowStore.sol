// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";

/// @notice Ghost store of the escrow invariant campaign: what the handler saw go in and out, a reference model of
/// every job (the spec in NatSpec, written as state), and counters of violations that must stay zero.
/// @dev The handler inherits it, so ghost writes are plain storage writes rather than calls to a separate contract
/// (Sablier keeps its store apart because several handlers share it; here there is one handler).
abstract contract EscrowStore {
    /// @notice The reference model of one job, updated only after a call to the escrow succeeded.
    struct GhostJob {
        address client;
        uint32 totalSteps;
        uint32 interval;
        uint128 maxPrice;
        uint128 budget;
        uint64 disputeWindow;
        IJobEscrow.JobStatus phase; // stored phase (Open, Running, DisputeWindow, Disputed, Settled, Cancelled)
        uint64 epoch;
        address assignee;
        uint128 price;
        uint64 lease;
        uint64 progress; // last assignment, report or acceptance (the escrow's lastProgressAt)
        uint32 accepted;
        bytes32 acceptedHash;
        uint32 pending;
        bytes32 pendingHash;
        uint128 paid; // credited for accepted steps (the escrow voids it on an upheld dispute; the model keeps it)
        uint64 verdictAt;
        uint64 disputedAt;
        bool upheld;
        uint64 progressTimeout; // the job's bound on time without progress
        uint16 stepMillis; // its template's step bound at creation: progressTimeout = interval × it
        uint64 stallSince; // creation or the last acceptance (reopening leaves it): `expire` runs from here
        address pendingProvider; // the pending checkpoint's reporter: credited or slashed for it
        uint64 pendingEpoch;
        uint128 pendingPrice;
        uint64 reportedAt;
        bool pendingFabricated; // the reporter made the pending checkpoint up: only then may the Safe slash
    }

    /// @notice A provider's stake as the model books it (the registry's Stake).
    struct GhostStake {
        uint128 deposited;
        uint128 locked;
        uint128 unbonding;
        uint64 readyAt;
    }

    /// @notice A provider's record as the handler set it.
    struct GhostProvider {
        bool registered;
        bool active;
        uint128 price;
    }

    // ------------------------------------------------------------------ USDC in and out of the escrow

    uint256 public ghost_budgetsDeposited;
    uint256 public ghost_bondsDeposited;
    /// @dev Tokens sent to the escrow by plain transfer: the escrow owes them to no one.
    uint256 public ghost_donated;
    uint256 public ghost_withdrawn;
    /// @dev Stake in and out of the registry, and what slashing moved from it to the escrow.
    uint256 public ghost_stakeDeposited;
    uint256 public ghost_stakeWithdrawn;
    uint256 public ghost_stakeSlashed;
    /// @notice Locks forfeited to clients by providers on probation (holds ended without an accepted checkpoint).
    uint256 public ghost_stakeForfeited;
    /// @notice Providers with an accepted checkpoint: off probation for good.
    mapping(address provider => bool) public ghost_proven;

    // ------------------------------------------------------------------ per job

    uint256 public ghost_jobCount;
    /// @notice The template's step bound as the owner last set it (ms; 0: never set, the escrow's maximum).
    uint16 public ghost_stepMillis;
    mapping(uint256 jobId => GhostJob) internal _ghostJobs;
    mapping(uint256 jobId => mapping(uint32 step => bool)) public ghost_stepPaid;
    mapping(uint256 jobId => mapping(address provider => uint256)) public ghost_earned;
    mapping(uint256 jobId => mapping(address provider => uint256)) public ghost_claimed;
    mapping(uint256 jobId => mapping(address provider => bool)) public ghost_fenced;
    /// @dev Last epoch and status read from the escrow after a call that touched the job (or after a time warp).
    mapping(uint256 jobId => uint64) public ghost_lastEpoch;
    mapping(uint256 jobId => IJobEscrow.JobStatus) public ghost_lastStatus;
    mapping(uint256 jobId => uint256) public ghost_bondsPosted;
    mapping(uint256 jobId => uint256) public ghost_bondsReturned;
    mapping(uint256 jobId => uint256) public ghost_bondsForfeited;
    /// @dev The model's stake lock of each provider on each job, and how often each was slashed.
    mapping(uint256 jobId => mapping(address provider => uint128)) public ghost_lock;
    mapping(uint256 jobId => mapping(address provider => uint256)) public ghost_slashes;

    // ------------------------------------------------------------------ per account

    mapping(address provider => GhostProvider) public ghost_providers;
    /// @dev What the model says each account may withdraw.
    mapping(address account => uint256) public ghost_owed;
    mapping(address provider => GhostStake) internal _ghostStakes;

    // ------------------------------------------------------------------ violations: every one must stay 0

    uint256 public ghost_stepsPaidTwice;
    uint256 public ghost_epochDecreases;
    /// @dev Successful reports or heartbeats by anyone but the live assignee of the current epoch.
    uint256 public ghost_staleWritesSucceeded;
    /// @dev Successful accept/refuse calls that named a checkpoint other than the pending one, or that came from
    /// anyone but the verifier Safe without its owners' signatures.
    uint256 public ghost_forgedDecisionsSucceeded;
    uint256 public ghost_terminalStatusChanges;
    uint256 public ghost_illegalTransitions;
    /// @dev Slashes of a checkpoint its reporter did not fabricate (only the Safe can slash; forgeries must fail).
    uint256 public ghost_honestSlashed;
    /// @dev A call succeeded or reverted against the model's prediction, or the escrow's state left the model.
    uint256 public ghost_unexpectedOutcomes;
    string public ghost_firstUnexpected;

    // ------------------------------------------------------------------ coverage (reported, not asserted)

    uint256 public ghost_staleWritesReverted;
    uint256 public ghost_forgedDecisionsReverted;
    mapping(bytes32 action => uint256) public ghost_calls;
    mapping(bytes32 outcome => uint256) public ghost_successes;

    function ghostJob(uint256 jobId) external view returns (GhostJob memory) {
        return _ghostJobs[jobId];
    }

    function ghostStake(address provider) external view returns (GhostStake memory) {
        return _ghostStakes[provider];
    }

    function _unexpected(string memory what) internal {
        if (ghost_unexpectedOutcomes == 0) ghost_firstUnexpected = what;
        ghost_unexpectedOutcomes += 1;
    }
}
