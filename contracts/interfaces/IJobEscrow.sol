// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IJobEscrow
/// @notice Holds each training job's budget (test USDC) from creation until settlement, tracks who trains it
/// (with an epoch as fencing token), and pays each provider only for checkpoints the verifier multisig accepted.
/// @dev Trust assumptions (read before integrating):
/// @dev Warning: the token is test USDC on local chains and Base Sepolia only. No real value is intended.
/// @dev Warning: the verifier multisig (a Safe, 2 of 3 verifier keys) decides which checkpoints are accepted and
/// submits the verdict. Two colluding verifiers can accept bad work; the client's remedy is a bonded dispute.
/// @dev Warning: the arbiter decides disputes. It can void a job's payments (dispute upheld) or forfeit the
/// client's bond to the fee recipient (dispute rejected). If it stays silent for ARBITER_TIMEOUT (3 days) anyone
/// may settle: the verdict stands and the bond goes back to the client.
/// @dev Warning: the coordinator may assign and unassign at any time. It cannot move funds, and unassigning only
/// discards the pending (unaccepted) checkpoint; accepted work stays credited. Once a provider's lease lapses,
/// anyone may unassign it, so a dead coordinator never freezes a job.
/// @dev Warning: an assignee must report a checkpoint at least every PROGRESS_TIMEOUT (6 hours) of its own
/// time; size checkpoint intervals so that one fits. Time waiting for the verifiers' decision does not count.
/// @dev Warning: the owner approves workload templates and names the coordinator, the arbiter and the fee
/// recipient. It cannot touch locked budgets or balances.
interface IJobEscrow {
    /// @notice The one status of a job. Stored phases are Open, Running, DisputeWindow (verdict submitted),
    /// Disputed, Settled and Cancelled; Settleable and ArbiterTimedOut are derived from the clock by `statusOf`.
    enum JobStatus {
        None, // no such job
        Open, // budget locked, waiting for a provider
        Running, // a provider holds the current epoch
        DisputeWindow, // verdict submitted; the client may still dispute
        Settleable, // the dispute window passed without a dispute; anyone may settle
        Disputed, // the client posted a bond; the arbiter may decide
        ArbiterTimedOut, // the arbiter stayed silent for 3 days; anyone may settle, verdict stands
        Settled, // final; budgets released to withdrawable balances
        Cancelled // final; the client took the unspent budget back
    }

    /// @notice Why a provider lost its assignment.
    enum UnassignReason {
        Coordinator, // the coordinator unassigned it (missed heartbeats)
        LeaseLapsed, // anyone unassigned it after its on-chain lease lapsed
        Refused // the verifier multisig refused its checkpoint; it is fenced off this job
    }

    /// @notice What a client asks for when creating a job.
    struct JobRequest {
        bytes32 templateId; // approved workload template (content hash of its graphs and rules)
        uint32 totalSteps; // logical steps to train
        uint32 checkpointInterval; // at most this many steps between two reported checkpoints
        uint128 maxPricePerStep; // the most the client pays per accepted step
        uint128 budget; // test USDC locked now; must cover the remaining steps at each assignment's price
        uint64 disputeWindow; // seconds after the verdict during which the client may dispute
    }

    /// @notice A job as stored.
    struct Job {
        address client; // who locked the budget and gets the refund
        uint64 epoch; // fencing token: bumped by every assign, unassign and refusal
        JobStatus phase; // stored phase (see JobStatus)
        bytes32 templateId;
        bytes32 seed; // data-order seed, fixed at creation, shared by providers and verifiers
        uint32 totalSteps;
        uint32 checkpointInterval;
        uint32 acceptedStep; // last step accepted by the verifier multisig; work resumes from here
        uint32 pendingStep; // step of the reported, undecided checkpoint (0: none)
        uint64 leaseExpiresAt; // the assignee is live until this instant (inclusive)
        uint64 disputeWindow;
        address provider; // current assignee (0 when Open)
        uint64 lastProgressAt; // the assignee's last assignment, report or accepted checkpoint (0 when Open)
        uint128 pricePerStep; // fixed for the current assignment
        uint128 maxPricePerStep;
        uint128 budget;
        uint128 paid; // credited to providers for accepted steps; never above budget
        bytes32 acceptedHash; // checkpoint blob hash at acceptedStep (0 before the first)
        bytes32 pendingHash; // checkpoint blob hash at pendingStep
    }

    /// @notice The verdict on a job's final model.
    struct Verdict {
        bytes32 modelHash; // must equal the final accepted checkpoint's hash
        uint256 metric; // evaluation metric (held-out accuracy in basis points for the MNIST template)
        bool passed; // whether the final model met the template's rules
        uint64 submittedAt; // the dispute window runs from here
    }

    /// @notice A client's dispute of a verdict. One per job.
    struct Dispute {
        uint128 bond; // test USDC posted by the client; returned or forfeited exactly once
        uint64 openedAt; // the arbiter may decide until openedAt + ARBITER_TIMEOUT (inclusive)
        bool resolved; // the arbiter decided, or the timeout applied
        bool upheld; // the arbiter agreed with the client: the job's payments are void
    }

    event JobCreated(
        uint256 indexed jobId,
        address indexed client,
        bytes32 indexed templateId,
        bytes32 seed,
        uint32 totalSteps,
        uint32 checkpointInterval,
        uint128 maxPricePerStep,
        uint128 budget,
        uint64 disputeWindow
    );
    event ProviderAssigned(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint128 pricePerStep,
        uint32 resumeStep,
        bytes32 resumeHash,
        uint64 leaseExpiresAt
    );
    event ProviderUnassigned(
        uint256 indexed jobId, address indexed provider, uint64 newEpoch, UnassignReason reason, address by
    );
    event LeaseExtended(uint256 indexed jobId, address indexed provider, uint64 epoch, uint64 leaseExpiresAt);
    event CheckpointReported(
        uint256 indexed jobId, address indexed provider, uint64 epoch, uint32 step, bytes32 checkpointHash
    );
    event CheckpointAccepted(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        uint32 stepsCredited,
        uint128 amount
    );
    event CheckpointRefused(
        uint256 indexed jobId, address indexed provider, uint64 epoch, uint32 step, bytes32 checkpointHash
    );
    event VerdictSubmitted(
        uint256 indexed jobId, bytes32 modelHash, uint256 metric, bool passed, uint64 disputeDeadline
    );
    event DisputeOpened(uint256 indexed jobId, address indexed client, uint128 bond, uint64 arbiterDeadline);
    event DisputeResolved(uint256 indexed jobId, address indexed arbiter, bool upheld);
    event ArbiterTimedOut(uint256 indexed jobId, address indexed by);
    /// @notice `refund` moved to the client's withdrawable balance; `bondReturned`/`bondForfeited` likewise to the
    /// client and the fee recipient; `providersPaid` stays claimable per provider through `claimEarnings`.
    event JobSettled(
        uint256 indexed jobId, uint128 refund, uint128 providersPaid, uint128 bondReturned, uint128 bondForfeited
    );
    event JobCancelled(uint256 indexed jobId, uint128 refund);
    event EarningsReleased(uint256 indexed jobId, address indexed provider, uint128 amount);
    event Withdrawn(address indexed account, uint256 amount);
    event TemplateApprovalSet(bytes32 indexed templateId, bool approved);
    event CoordinatorSet(address indexed coordinator);
    event ArbiterSet(address indexed arbiter);
    event FeeRecipientSet(address indexed feeRecipient);

    /// @notice The job is in `current`; the call needs one of the statuses whose bits are set in `allowed`
    /// (bit i = JobStatus(i)).
    error JobEscrowUnexpectedStatus(uint256 jobId, JobStatus current, uint256 allowed);
    error JobEscrowZeroAddress();
    error JobEscrowZeroAmount();
    error JobEscrowTemplateNotApproved(bytes32 templateId);
    error JobEscrowInvalidSteps(uint32 totalSteps, uint32 checkpointInterval);
    error JobEscrowInvalidDisputeWindow(uint64 given, uint64 min, uint64 max);
    error JobEscrowNotClient(uint256 jobId, address caller, address client);
    error JobEscrowNotCoordinator(address caller, address coordinator);
    error JobEscrowNotArbiter(address caller, address arbiter);
    error JobEscrowProviderInactive(address provider);
    error JobEscrowProviderFenced(uint256 jobId, address provider);
    error JobEscrowPriceAboveMax(uint256 jobId, uint128 price, uint128 maxPricePerStep);
    error JobEscrowBudgetShort(uint256 jobId, uint256 needed, uint256 available);
    error JobEscrowNotAssignee(uint256 jobId, address caller, address assignee);
    error JobEscrowStaleEpoch(uint256 jobId, uint64 given, uint64 current);
    error JobEscrowLeaseActive(uint256 jobId, uint64 leaseExpiresAt, uint256 now_);
    error JobEscrowLeaseLapsed(uint256 jobId, uint64 leaseExpiresAt, uint256 now_);
    /// @notice The assignee made no progress (no report, nothing pending) for longer than PROGRESS_TIMEOUT.
    error JobEscrowNoProgress(uint256 jobId, uint64 lastProgressAt, uint256 now_);
    error JobEscrowCheckpointPending(uint256 jobId, uint32 pendingStep);
    error JobEscrowInvalidStep(uint256 jobId, uint32 step, uint32 acceptedStep, uint32 maxStep);
    error JobEscrowZeroHash(uint256 jobId);
    error JobEscrowNoSuchPendingCheckpoint(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash);
    error JobEscrowInvalidVerifierSignatures(bytes32 digest);
    error JobEscrowTrainingIncomplete(uint256 jobId, uint32 acceptedStep, uint32 totalSteps);
    error JobEscrowVerdictHashMismatch(uint256 jobId, bytes32 given, bytes32 finalCheckpoint);
    error JobEscrowBondNotApproved(uint256 jobId, uint256 allowance, uint256 bond);
    error JobEscrowNoEarnings(uint256 jobId, address provider);
    error JobEscrowNothingOwed(address account);

    // ----- client -----

    /// @notice Locks `request.budget` from the caller (needs an allowance) and opens a job.
    function createJob(JobRequest calldata request) external returns (uint256 jobId);

    /// @notice Same as `createJob`, approving the escrow with an EIP-2612 permit in the same transaction.
    /// A permit that was front-run (already used) is ignored when the allowance is there anyway.
    function createJobWithPermit(JobRequest calldata request, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
        returns (uint256 jobId);

    /// @notice The client takes the unspent budget back from an Open job. Accepted work stays claimable.
    function cancel(uint256 jobId) external;

    /// @notice The client disputes the verdict during the dispute window, posting `disputeBond` (allowance needed).
    function dispute(uint256 jobId) external;

    // ----- coordinator (or anyone after a lapsed lease) -----

    /// @notice Assigns an Open job to an active provider whose price fits. Bumps the epoch.
    function assign(uint256 jobId, address provider) external;

    /// @notice Removes the assignee and reopens the job, bumping the epoch. The coordinator may do this at any
    /// time; anyone may once `block.timestamp > leaseExpiresAt`. A pending checkpoint is discarded.
    function unassign(uint256 jobId) external;

    // ----- provider -----

    /// @notice The assignee extends its lease by `leaseDuration` (only while the lease has not lapsed). With no
    /// checkpoint pending, heartbeats stop working PROGRESS_TIMEOUT after the assignee's last progress (assignment,
    /// report or acceptance), so a provider that only heartbeats cannot hold a job forever: its lease lapses, anyone
    /// may unassign it, and the client may cancel.
    function heartbeat(uint256 jobId, uint64 epoch) external;

    /// @notice The assignee reports a checkpoint's blob hash. `step` must be above the accepted step and at most
    /// one checkpoint interval past it. Extends the lease.
    function reportCheckpoint(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash) external;

    // ----- verifier multisig: called by the Safe itself, or by anyone carrying 2-of-3 owner signatures -----

    /// @notice Accepts the pending checkpoint and credits its steps to the assignee at the assignment's price.
    function acceptCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external;

    /// @notice Refuses the pending checkpoint: the assignee is fenced off the job and the job reopens from the
    /// last accepted checkpoint.
    function refuseCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external;

    /// @notice Submits the verdict on the final model once every step is accepted. Opens the dispute window.
    function submitVerdict(uint256 jobId, bytes32 modelHash, uint256 metric, bool passed, bytes calldata signatures)
        external;

    // ----- arbiter -----

    /// @notice Decides a dispute until `openedAt + ARBITER_TIMEOUT` (inclusive). Upheld: the job's provider
    /// payments are void, the whole budget and the bond go back to the client. Rejected: the verdict stands and
    /// the bond goes to the fee recipient. Either way the job is settled.
    function resolveDispute(uint256 jobId, bool upheld) external;

    // ----- anyone -----

    /// @notice Settles a job whose dispute window passed, or whose arbiter stayed silent past the deadline
    /// (verdict stands, bond returned). Releases the unspent budget to the client's withdrawable balance.
    function settle(uint256 jobId) external;

    /// @notice Moves `provider`'s accepted earnings on a Settled or Cancelled job to its withdrawable balance.
    function claimEarnings(uint256 jobId, address provider) external;

    /// @notice Pays the caller everything it is owed (pull payment).
    function withdraw() external;

    // ----- views -----

    function statusOf(uint256 jobId) external view returns (JobStatus);
    function jobOf(uint256 jobId) external view returns (Job memory);
    function verdictOf(uint256 jobId) external view returns (Verdict memory);
    function disputeOf(uint256 jobId) external view returns (Dispute memory);
    function earningsOf(uint256 jobId, address provider) external view returns (uint128);
    function isFenced(uint256 jobId, address provider) external view returns (bool);
    /// @notice What `account` can withdraw now.
    function owed(address account) external view returns (uint256);
    /// @notice Proof of reserves: the escrow's token balance and everything it owes (locked budgets, bonds,
    /// withdrawable balances). `held >= owes` after every transaction.
    function reserves() external view returns (uint256 held, uint256 owes);
    /// @notice EIP-712 digest the verifier Safe signs (as an EIP-1271 message) to accept or refuse a checkpoint.
    function checkpointDecisionDigest(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash, bool accept)
        external
        view
        returns (bytes32);
    /// @notice EIP-712 digest the verifier Safe signs for a verdict.
    function verdictDigest(uint256 jobId, bytes32 modelHash, uint256 metric, bool passed)
        external
        view
        returns (bytes32);
}
