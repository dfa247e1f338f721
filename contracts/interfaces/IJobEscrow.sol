// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IProviderRegistry} from "./IProviderRegistry.sol";
import {IVerifierQuorum} from "./IVerifierQuorum.sol";

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
/// @dev Warning: an assignee must make progress (a report or an acceptance) within its job's `progressTimeout`
/// (checkpointInterval × its template's step bound, MAX_SECONDS_PER_STEP unless the owner set one; at
/// least one lease, at most PROGRESS_TIMEOUT); while a checkpoint
/// waits for the verifiers (at most DECISION_TIMEOUT) it may keep heartbeating. So no identity holds a job longer
/// than progressTimeout + DECISION_TIMEOUT + one lease without progress.
/// @dev Warning: a provider takes a job only with stake at risk: assignment locks max(minStake, price ×
/// checkpointInterval) of its registry stake until it no longer holds the job and has no checkpoint awaiting
/// decision. A refusal carrying a 2-of-3 signed fault slashes that lock (CLIENT_SHARE_BPS to the client,
/// FINDER_SHARE_BPS to the verifier that found the fault, the rest to the fee recipient) and voids the provider's
/// unclaimed earnings on the job. Only the verifier Safe can prove a fault; a plain refusal never slashes.
/// @dev Warning: the owner approves workload templates and names the coordinator, the arbiter and the fee
/// recipient. It cannot touch locked budgets or balances.
interface IJobEscrow is IVerifierQuorum {
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

    /// @notice How a provider's hold on a job ended without an accepted checkpoint, in a way that is the holder's
    /// own failure (a probationary provider's lock is forfeited to the client for each of these). A report that
    /// lapsed undecided, or a coordinator's unassignment within the job's progress timeout, is not among them.
    enum HoldEnd {
        Unassigned, // the coordinator took the job away after no progress for the job's progress timeout
        LeaseLapsed, // its lease lapsed and someone unassigned it
        Refused // the verifier multisig refused its checkpoint without a fault
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
        uint64 progressTimeout; // this job's bound on an assignee's time without progress (fixed at creation)
        uint64 stallSince; // the job's last real progress, its creation or last acceptance (for `expire`)
        address pendingProvider; // who reported the pending checkpoint: it is credited or slashed for it
        uint64 pendingEpoch; // the epoch it was reported at; decisions name this epoch
        uint128 pendingPrice; // the reporter's price for it
        uint64 reportedAt; // the pending checkpoint may be decided until reportedAt + DECISION_TIMEOUT
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

    /// @notice A fault the verifiers proved by replaying one step: from the committed input state, the step
    /// gives `replayedHash`, not the `committedHash` the provider's checkpoint claims.
    struct Fault {
        uint32 step; // the faulty step, in (acceptedStep, pending step]
        bytes32 inputHash; // state hash before the step, as committed by the provider
        bytes32 committedHash; // state hash after the step, as committed by the provider
        bytes32 replayedHash; // state hash after the step, as replayed by the verifier; differs from committedHash
        address finder; // the verifier whose replay found it; receives the bounty
    }

    /// @notice The escrow's roles, named once at deployment. `owner` approves templates and may rename the others
    /// (two-step ownership transfer); `verifierSafe` is fixed for the escrow's life.
    struct Roles {
        address owner; // approves templates; names the coordinator, the arbiter and the fee recipient
        address coordinator; // assigns and unassigns providers
        address arbiter; // decides disputes
        address feeRecipient; // receives forfeited dispute bonds
        address verifierSafe; // the 2-of-3 verifier Safe that accepts, refuses and submits verdicts
    }

    // ------------------------------------------------------------------ events

    /// @notice Emitted when a client locked a budget and opened a job.
    /// @param jobId The new job's id (sequential from 1).
    /// @param client Who locked the budget and gets the refund.
    /// @param templateId The approved workload template.
    /// @param seed The data-order seed shared by providers and verifiers.
    /// @param totalSteps Logical steps to train.
    /// @param checkpointInterval At most this many steps between two reported checkpoints.
    /// @param maxPricePerStep The most the client pays per accepted step.
    /// @param budget Test USDC locked.
    /// @param disputeWindow Seconds after the verdict during which the client may dispute.
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
    /// @notice Emitted when the coordinator assigned an Open job to a provider.
    /// @param jobId The job.
    /// @param provider The new assignee.
    /// @param epoch The new epoch (fencing token); only this provider may write at this epoch.
    /// @param pricePerStep The provider's price, fixed for this assignment.
    /// @param resumeStep The accepted step training resumes from.
    /// @param resumeHash The accepted checkpoint's blob hash (0 before the first).
    /// @param leaseExpiresAt The assignee is live until this instant (inclusive).
    event ProviderAssigned(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint128 pricePerStep,
        uint32 resumeStep,
        bytes32 resumeHash,
        uint64 leaseExpiresAt
    );
    /// @notice Emitted when a provider lost its assignment; the job is Open again.
    /// @param jobId The job.
    /// @param provider The former assignee.
    /// @param newEpoch The epoch after the bump; the former assignee's epoch is stale from now on.
    /// @param reason Why (coordinator, lapsed lease, refused checkpoint).
    /// @param by Who sent the transaction.
    event ProviderUnassigned(
        uint256 indexed jobId,
        address indexed provider,
        uint64 newEpoch,
        UnassignReason reason,
        address by
    );
    /// @notice Emitted when the assignee's heartbeat extended its lease.
    /// @param jobId The job.
    /// @param provider The assignee.
    /// @param epoch The assignment's epoch.
    /// @param leaseExpiresAt The new end of the lease (inclusive).
    event LeaseExtended(uint256 indexed jobId, address indexed provider, uint64 epoch, uint64 leaseExpiresAt);
    /// @notice Emitted when the assignee reported a checkpoint for the verifiers to decide.
    /// @param jobId The job.
    /// @param provider The assignee that produced it.
    /// @param epoch The assignment's epoch.
    /// @param step The checkpoint's step.
    /// @param checkpointHash The checkpoint blob's hash.
    event CheckpointReported(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash
    );
    /// @notice Emitted when the verifier multisig accepted the pending checkpoint.
    /// @param jobId The job.
    /// @param provider The provider credited.
    /// @param epoch The epoch the checkpoint was reported at.
    /// @param step The new accepted step.
    /// @param checkpointHash The new accepted checkpoint's hash.
    /// @param stepsCredited Steps credited (step − previous accepted step).
    /// @param amount Test USDC credited to `provider` (stepsCredited × the assignment's price).
    event CheckpointAccepted(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        uint32 stepsCredited,
        uint128 amount
    );
    /// @notice Emitted when the verifier multisig refused the pending checkpoint; `provider` is fenced off the job.
    /// @param jobId The job.
    /// @param provider The provider that reported it.
    /// @param epoch The epoch it was reported at.
    /// @param step The refused checkpoint's step.
    /// @param checkpointHash The refused checkpoint's hash.
    event CheckpointRefused(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash
    );
    /// @notice Emitted when a pending checkpoint's decision window closed without a decision; it is dropped.
    /// @param jobId The job.
    /// @param provider Its reporter.
    /// @param epoch The epoch it was reported at.
    /// @param step Its step.
    /// @param checkpointHash Its hash.
    event CheckpointLapsed(
        uint256 indexed jobId,
        address indexed provider,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash
    );
    /// @notice Emitted when a refusal carrying a proven fault slashed the reporter's lock on the job.
    /// @param jobId The job.
    /// @param provider The provider slashed.
    /// @param faultStep The faulty step.
    /// @param finder The verifier that found it.
    /// @param slashed Test USDC taken from its stake.
    /// @param toClient Credited to the client's withdrawable balance.
    /// @param toFinder Credited to the finder's withdrawable balance.
    /// @param toFeeRecipient Credited to the fee recipient's withdrawable balance.
    /// @param earningsVoided The provider's unclaimed earnings on the job, returned to the job's budget.
    event ProviderSlashed(
        uint256 indexed jobId,
        address indexed provider,
        uint32 faultStep,
        address indexed finder,
        uint128 slashed,
        uint128 toClient,
        uint128 toFinder,
        uint128 toFeeRecipient,
        uint128 earningsVoided
    );
    /// @notice Emitted when a hold of a provider on probation (no accepted checkpoint yet) ended without an accepted
    /// checkpoint: its lock on the job went to the job's client for the delay.
    /// @param jobId The job.
    /// @param provider The provider.
    /// @param amount Test USDC taken from its stake and credited to the client's withdrawable balance.
    /// @param how How the hold ended.
    event HoldForfeited(uint256 indexed jobId, address indexed provider, uint128 amount, HoldEnd how);
    /// @notice Emitted when a provider's first checkpoint was accepted: its probation ended for good. (The job is
    /// the first indexed argument, as in every escrow event about a job, so a job's log filter finds it.)
    /// @param jobId The job of that checkpoint.
    /// @param provider The provider.
    event ProbationEnded(uint256 indexed jobId, address indexed provider);
    /// @notice Emitted when anyone expired an Open job that saw no acceptance for more than STALL_EXPIRY.
    /// @param jobId The job.
    /// @param refund The unspent budget, moved to the client's withdrawable balance.
    /// @param by Who expired it.
    event JobExpired(uint256 indexed jobId, uint128 refund, address by);
    /// @notice Emitted when the verifier multisig submitted the verdict on the final model.
    /// @param jobId The job.
    /// @param modelHash The final accepted checkpoint's hash.
    /// @param metric The evaluation metric (held-out accuracy in basis points for MNIST).
    /// @param passed Whether the model met the template's rules.
    /// @param disputeDeadline The client may dispute until this instant (inclusive).
    /// @param newEpoch The epoch after the bump that fences the last assignee.
    event VerdictSubmitted(
        uint256 indexed jobId,
        bytes32 modelHash,
        uint256 metric,
        bool passed,
        uint64 disputeDeadline,
        uint64 newEpoch
    );
    /// @notice Emitted when the client disputed the verdict and posted the bond.
    /// @param jobId The job.
    /// @param client The client.
    /// @param bond Test USDC posted.
    /// @param arbiterDeadline The arbiter may decide until this instant (inclusive).
    event DisputeOpened(uint256 indexed jobId, address indexed client, uint128 bond, uint64 arbiterDeadline);
    /// @notice Emitted when the arbiter decided a dispute.
    /// @param jobId The job.
    /// @param arbiter The arbiter.
    /// @param upheld True: the client was right and the job's payments are void.
    event DisputeResolved(uint256 indexed jobId, address indexed arbiter, bool upheld);
    /// @notice Emitted when a job was settled after the arbiter stayed silent past its deadline.
    /// @param jobId The job.
    /// @param by Who settled it.
    event ArbiterTimedOut(uint256 indexed jobId, address indexed by);
    /// @notice Emitted when a job was settled.
    /// @param jobId The job.
    /// @param refund Moved to the client's withdrawable balance.
    /// @param providersPaid Credited to providers; stays claimable per provider through `claimEarnings`.
    /// @param bondReturned Moved to the client's withdrawable balance.
    /// @param bondForfeited Moved to the fee recipient's withdrawable balance.
    event JobSettled(
        uint256 indexed jobId,
        uint128 refund,
        uint128 providersPaid,
        uint128 bondReturned,
        uint128 bondForfeited
    );
    /// @notice Emitted when the client cancelled an Open job (also emitted by `expire`).
    /// @param jobId The job.
    /// @param refund The unspent budget, moved to the client's withdrawable balance.
    event JobCancelled(uint256 indexed jobId, uint128 refund);
    /// @notice Emitted when a provider's earnings on a final job moved to its withdrawable balance.
    /// @param jobId The job.
    /// @param provider The provider.
    /// @param amount Test USDC released.
    event EarningsReleased(uint256 indexed jobId, address indexed provider, uint128 amount);
    /// @notice Emitted when an account withdrew everything it was owed.
    /// @param account The account paid.
    /// @param amount Test USDC transferred.
    event Withdrawn(address indexed account, uint256 amount);
    /// @notice Emitted when the owner approved or revoked a workload template.
    /// @param templateId The template.
    /// @param approved Whether new jobs may use it.
    event TemplateApprovalSet(bytes32 indexed templateId, bool approved);
    /// @notice Emitted when the owner set a template's step bound: the slowest an honest step of it may take. A job
    /// takes it at creation; its progress timeout is checkpointInterval × it (at least a lease, at most
    /// PROGRESS_TIMEOUT), the on-chain measure of "no progress" that prices a newcomer's stalled hold.
    /// @param templateId The template.
    /// @param stepMillis Milliseconds per step, in [1, MAX_SECONDS_PER_STEP × 1000].
    event TemplateStepBoundSet(bytes32 indexed templateId, uint16 stepMillis);
    /// @notice Emitted when the coordinator role was (re)assigned.
    /// @param coordinator The new coordinator.
    event CoordinatorSet(address indexed coordinator);
    /// @notice Emitted when the arbiter role was (re)assigned.
    /// @param arbiter The new arbiter.
    event ArbiterSet(address indexed arbiter);
    /// @notice Emitted when the fee recipient was (re)assigned.
    /// @param feeRecipient The new fee recipient.
    event FeeRecipientSet(address indexed feeRecipient);

    // ------------------------------------------------------------------ errors (ERC-6093 style: offending values)

    /// @notice The job is in `current`; the call needs one of the statuses whose bits are set in `allowed`.
    /// @param jobId The job.
    /// @param current Its status now.
    /// @param allowed Bit i set = JobStatus(i) allowed.
    error JobEscrowUnexpectedStatus(uint256 jobId, JobStatus current, uint256 allowed);
    /// @notice A required address (token, registry or role) was zero.
    error JobEscrowZeroAddress();
    /// @notice A required amount (lease, bond, price or budget) was zero.
    error JobEscrowZeroAmount();
    /// @notice The template is not approved for new jobs.
    /// @param templateId The template given.
    error JobEscrowTemplateNotApproved(bytes32 templateId);
    /// @notice The zero template id cannot be approved or revoked.
    error JobEscrowZeroTemplate();
    /// @notice A step bound must be at least 1 ms and at most MAX_SECONDS_PER_STEP.
    /// @param templateId The template given.
    /// @param stepMillis The bound given (ms).
    /// @param maxMillis The largest bound allowed (ms).
    error JobEscrowInvalidStepBound(bytes32 templateId, uint16 stepMillis, uint16 maxMillis);
    /// @notice Steps are zero, or the checkpoint interval is zero or above the steps.
    /// @param totalSteps Steps given.
    /// @param checkpointInterval Interval given.
    error JobEscrowInvalidSteps(uint32 totalSteps, uint32 checkpointInterval);
    /// @notice The dispute window is outside [min, max].
    /// @param given The window given, seconds.
    /// @param min MIN_DISPUTE_WINDOW.
    /// @param max MAX_DISPUTE_WINDOW.
    error JobEscrowInvalidDisputeWindow(uint64 given, uint64 min, uint64 max);
    /// @notice Only the job's client may do this.
    /// @param jobId The job.
    /// @param caller Who called.
    /// @param client The job's client.
    error JobEscrowNotClient(uint256 jobId, address caller, address client);
    /// @notice Only the coordinator may do this.
    /// @param caller Who called.
    /// @param coordinator The coordinator.
    error JobEscrowNotCoordinator(address caller, address coordinator);
    /// @notice Only the arbiter may do this.
    /// @param caller Who called.
    /// @param arbiter The arbiter.
    error JobEscrowNotArbiter(address caller, address arbiter);
    /// @notice The provider is not registered or not active.
    /// @param provider The provider.
    error JobEscrowProviderInactive(address provider);
    /// @notice The provider was refused on this job and may never be assigned it again.
    /// @param jobId The job.
    /// @param provider The provider.
    error JobEscrowProviderFenced(uint256 jobId, address provider);
    /// @notice The provider asks more than the job pays per step.
    /// @param jobId The job.
    /// @param price The provider's price.
    /// @param maxPricePerStep The job's maximum.
    error JobEscrowPriceAboveMax(uint256 jobId, uint128 price, uint128 maxPricePerStep);
    /// @notice The remaining budget does not cover the remaining steps at the provider's price.
    /// @param jobId The job.
    /// @param needed (totalSteps − acceptedStep) × price.
    /// @param available budget − paid.
    error JobEscrowBudgetShort(uint256 jobId, uint256 needed, uint256 available);
    /// @notice Only the job's current assignee may do this.
    /// @param jobId The job.
    /// @param caller Who called.
    /// @param assignee The current assignee.
    error JobEscrowNotAssignee(uint256 jobId, address caller, address assignee);
    /// @notice The epoch given is not the job's current one (the caller was fenced).
    /// @param jobId The job.
    /// @param given The epoch given.
    /// @param current The job's epoch.
    error JobEscrowStaleEpoch(uint256 jobId, uint64 given, uint64 current);
    /// @notice The assignee's lease has not lapsed; only the coordinator may unassign it now.
    /// @param jobId The job.
    /// @param leaseExpiresAt The lease's end (inclusive).
    /// @param now_ The block's timestamp.
    error JobEscrowLeaseActive(uint256 jobId, uint64 leaseExpiresAt, uint256 now_);
    /// @notice The assignee's lease lapsed; it may no longer write.
    /// @param jobId The job.
    /// @param leaseExpiresAt The lease's end (inclusive).
    /// @param now_ The block's timestamp.
    error JobEscrowLeaseLapsed(uint256 jobId, uint64 leaseExpiresAt, uint256 now_);
    /// @notice The assignee made no progress (no report, nothing pending) for longer than PROGRESS_TIMEOUT.
    /// @param jobId The job.
    /// @param lastProgressAt The assignee's last progress.
    /// @param now_ The block's timestamp.
    error JobEscrowNoProgress(uint256 jobId, uint64 lastProgressAt, uint256 now_);
    /// @notice A checkpoint is already waiting for the verifiers' decision.
    /// @param jobId The job.
    /// @param pendingStep Its step.
    error JobEscrowCheckpointPending(uint256 jobId, uint32 pendingStep);
    /// @notice The assignee's own checkpoint of this epoch lapsed undecided: the hold is over (it may neither
    /// report again nor heartbeat in this epoch).
    /// @param jobId The job.
    /// @param epoch The epoch.
    /// @param lapsedStep The lapsed checkpoint's step.
    error JobEscrowReportLapsed(uint256 jobId, uint64 epoch, uint32 lapsedStep);
    /// @notice The step is not in (acceptedStep, maxStep].
    /// @param jobId The job.
    /// @param step The step given.
    /// @param acceptedStep The job's accepted step.
    /// @param maxStep min(acceptedStep + checkpointInterval, totalSteps).
    error JobEscrowInvalidStep(uint256 jobId, uint32 step, uint32 acceptedStep, uint32 maxStep);
    /// @notice A checkpoint hash of zero was reported.
    /// @param jobId The job.
    error JobEscrowZeroHash(uint256 jobId);
    /// @notice The decision names a checkpoint that is not the pending one.
    /// @param jobId The job.
    /// @param epoch The epoch given.
    /// @param step The step given.
    /// @param checkpointHash The hash given.
    error JobEscrowNoSuchPendingCheckpoint(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash);
    /// @notice The signatures are not a valid 2-of-3 verifier Safe signature over `digest` (EIP-1271).
    /// @param digest The EIP-712 digest that was to be signed.
    error JobEscrowInvalidVerifierSignatures(bytes32 digest);
    /// @notice A verdict needs every step accepted.
    /// @param jobId The job.
    /// @param acceptedStep The job's accepted step.
    /// @param totalSteps The job's steps.
    error JobEscrowTrainingIncomplete(uint256 jobId, uint32 acceptedStep, uint32 totalSteps);
    /// @notice The verdict's model hash is not the final accepted checkpoint's.
    /// @param jobId The job.
    /// @param given The model hash given.
    /// @param finalCheckpoint The final accepted checkpoint's hash.
    error JobEscrowVerdictHashMismatch(uint256 jobId, bytes32 given, bytes32 finalCheckpoint);
    /// @notice The client has not approved the escrow for the dispute bond.
    /// @param jobId The job.
    /// @param allowance The client's allowance to the escrow.
    /// @param bond The bond needed.
    error JobEscrowBondNotApproved(uint256 jobId, uint256 allowance, uint256 bond);
    /// @notice The provider has no claimable earnings on this job (none, claimed, or voided by an upheld dispute).
    /// @param jobId The job.
    /// @param provider The provider.
    error JobEscrowNoEarnings(uint256 jobId, address provider);
    /// @notice The provider's free stake does not cover the lock the job needs.
    /// @param jobId The job.
    /// @param provider The provider.
    /// @param free Its free stake.
    /// @param needed The lock still needed: max(minStake, price × checkpointInterval) less any lock it has.
    error JobEscrowStakeShort(uint256 jobId, address provider, uint256 free, uint256 needed);
    /// @notice The pending checkpoint's decision window closed; it can no longer be accepted or refused.
    /// @param jobId The job.
    /// @param deadline reportedAt + DECISION_TIMEOUT (inclusive).
    /// @param now_ The block's timestamp.
    error JobEscrowDecisionWindowClosed(uint256 jobId, uint64 deadline, uint256 now_);
    /// @notice The fault's committed and replayed hashes are equal: that is no fault.
    /// @param jobId The job.
    /// @param committedHash The committed hash.
    /// @param replayedHash The replayed hash.
    error JobEscrowNotAFault(uint256 jobId, bytes32 committedHash, bytes32 replayedHash);
    /// @notice The fault's step is not in the pending checkpoint's segment (acceptedStep, pendingStep].
    /// @param jobId The job.
    /// @param faultStep The step given.
    /// @param acceptedStep The job's accepted step.
    /// @param pendingStep The pending checkpoint's step.
    error JobEscrowInvalidFaultStep(uint256 jobId, uint32 faultStep, uint32 acceptedStep, uint32 pendingStep);
    /// @notice The job saw its creation or an acceptance within STALL_EXPIRY: it is not stalled yet.
    /// @param jobId The job.
    /// @param expiresAt stallSince + STALL_EXPIRY (exclusive: expirable after it).
    /// @param now_ The block's timestamp.
    error JobEscrowNotExpired(uint256 jobId, uint64 expiresAt, uint256 now_);
    /// @notice The registry's stake token is not the escrow's token.
    /// @param token The escrow's token.
    /// @param stakeToken The registry's.
    error JobEscrowStakeTokenMismatch(address token, address stakeToken);
    /// @notice The registry's unbonding delay must be longer than the window in which a fault can be proven.
    /// @param unbondingDelay The registry's delay.
    /// @param decisionTimeout DECISION_TIMEOUT.
    error JobEscrowUnbondingTooShort(uint64 unbondingDelay, uint64 decisionTimeout);
    /// @notice The account is owed nothing.
    /// @param account The account.
    error JobEscrowNothingOwed(address account);

    // ------------------------------------------------------------------ constants and immutables

    /// @notice How long the arbiter may stay silent on a dispute before the verdict stands by default (3 days).
    function ARBITER_TIMEOUT() external view returns (uint64);
    /// @notice The shortest dispute window a job may ask for (1 minute).
    function MIN_DISPUTE_WINDOW() external view returns (uint64);
    /// @notice The longest dispute window a job may ask for (30 days).
    function MAX_DISPUTE_WINDOW() external view returns (uint64);
    /// @notice The longest progress timeout any job gets (6 hours).
    function PROGRESS_TIMEOUT() external view returns (uint64);
    /// @notice Seconds per step a job's progress timeout allows (× checkpointInterval, see Job.progressTimeout).
    function MAX_SECONDS_PER_STEP() external view returns (uint64);
    /// @notice The longest checkpoint interval whose lapses are evidence (PROGRESS_TIMEOUT / MAX_SECONDS_PER_STEP):
    /// past it a lapsed or timed-out hold returns the lock, on probation too.
    function MAX_CHECKPOINT_INTERVAL() external view returns (uint32);
    /// @notice How long a reported checkpoint stays decidable (1 hour); also the window to prove a fault in it.
    function DECISION_TIMEOUT() external view returns (uint64);
    /// @notice How long a job may go without an acceptance (or, before the first, since its creation) before
    /// anyone may expire it while it is Open (7 days). Assignment, unassignment and refusal do not restart it.
    function STALL_EXPIRY() external view returns (uint64);
    /// @notice Share of a slashed stake credited to the client, in basis points (50 %).
    function CLIENT_SHARE_BPS() external view returns (uint16);
    /// @notice Share of a slashed stake credited to the verifier that found the fault, in basis points (20 %).
    /// The rest (30 %) goes to the fee recipient.
    function FINDER_SHARE_BPS() external view returns (uint16);
    /// @notice The budget token (test USDC, 6 decimals).
    function token() external view returns (IERC20);
    /// @notice The provider registry consulted at assignment.
    function registry() external view returns (IProviderRegistry);
    /// @notice How long an assignee stays live after its last assignment, heartbeat, report or acceptance.
    function leaseDuration() external view returns (uint64);
    /// @notice The bond a client posts to dispute a verdict.
    function disputeBond() external view returns (uint128);

    // ------------------------------------------------------------------ roles and totals

    /// @notice Who may assign and unassign.
    function coordinator() external view returns (address);
    /// @notice Who decides disputes.
    function arbiter() external view returns (address);
    /// @notice Who receives forfeited bonds.
    function feeRecipient() external view returns (address);
    /// @notice Jobs created so far; ids run 1..jobCount.
    function jobCount() external view returns (uint256);
    /// @notice Budgets not yet released, providers' unclaimed earnings included.
    function totalLocked() external view returns (uint256);
    /// @notice Dispute bonds held.
    function totalBonds() external view returns (uint256);
    /// @notice Sum of every account's withdrawable balance.
    function totalWithdrawable() external view returns (uint256);
    /// @notice Whether new jobs may use `templateId`.
    /// @param templateId The template.
    function isApprovedTemplate(bytes32 templateId) external view returns (bool);
    /// @notice The slowest an honest step of `templateId` may take (ms): MAX_SECONDS_PER_STEP × 1000 unless set.
    /// @param templateId The template.
    function templateStepBound(bytes32 templateId) external view returns (uint16);

    /// @notice Whether `provider` has had a checkpoint accepted (its probation is over).
    function isProven(address provider) external view returns (bool);

    // ----- owner -----

    /// @notice Approves or revokes a workload template for new jobs. Jobs already created keep theirs.
    /// @dev Warning: only the owner; it cannot touch locked budgets or balances.
    /// @param templateId The template's content hash (not zero).
    /// @param approved Whether new jobs may use it.
    function setTemplateApproval(bytes32 templateId, bool approved) external;
    /// @notice Sets the slowest an honest step of `templateId` may take, for jobs created from now on.
    /// @dev Warning: only the owner. Too low a bound lets jobs' progress timeouts expire under honest providers on
    /// probation (their locks are forfeited at a lapse); set it from the template's work on the slowest device that
    /// may take it.
    /// @param templateId The template's content hash (not zero).
    /// @param stepMillis Milliseconds per step, in [1, MAX_SECONDS_PER_STEP × 1000].
    function setTemplateStepBound(bytes32 templateId, uint16 stepMillis) external;

    /// @notice Names a new coordinator. Running assignments are unaffected.
    /// @param coordinator_ The new coordinator (not zero).
    function setCoordinator(address coordinator_) external;

    /// @notice Names a new arbiter; it decides open disputes from now on.
    /// @param arbiter_ The new arbiter (not zero).
    function setArbiter(address arbiter_) external;

    /// @notice Names a new fee recipient for bonds forfeited from now on.
    /// @param feeRecipient_ The new fee recipient (not zero).
    function setFeeRecipient(address feeRecipient_) external;

    // ----- client -----

    /// @notice Locks `request.budget` from the caller (needs an allowance) and opens a job.
    /// @param request What the client asks for (see JobRequest).
    /// @return jobId The new job's id.
    function createJob(JobRequest calldata request) external returns (uint256 jobId);

    /// @notice Same as `createJob`, approving the escrow with an EIP-2612 permit in the same transaction.
    /// A permit that was front-run (already used) is ignored when the allowance is there anyway.
    /// @param request What the client asks for (see JobRequest).
    /// @param deadline The permit's deadline.
    /// @param v The permit signature's v.
    /// @param r The permit signature's r.
    /// @param s The permit signature's s.
    /// @return jobId The new job's id.
    function createJobWithPermit(
        JobRequest calldata request,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256 jobId);

    /// @notice The client takes the unspent budget back from an Open job. Accepted work stays claimable. Not
    /// while a checkpoint is still decidable (at most DECISION_TIMEOUT).
    /// @param jobId The job.
    function cancel(uint256 jobId) external;

    /// @notice The client disputes the verdict during the dispute window, posting `disputeBond` (allowance needed).
    /// @param jobId The job.
    function dispute(uint256 jobId) external;

    // ----- coordinator (or anyone after a lapsed lease) -----

    /// @notice Assigns an Open job to an active provider whose price fits. Bumps the epoch.
    /// @dev Warning: the coordinator's choice is a hint; every condition is re-checked here.
    /// @param jobId The job.
    /// @param provider The provider to assign.
    function assign(uint256 jobId, address provider) external;

    /// @notice Removes the assignee and reopens the job, bumping the epoch. The coordinator may do this at any
    /// time; anyone may once `block.timestamp > leaseExpiresAt`. A pending checkpoint stays decidable: it is
    /// credited to (or slashed from) its reporter, never to whoever holds the job next.
    /// @param jobId The job.
    function unassign(uint256 jobId) external;

    // ----- provider -----

    /// @notice The assignee extends its lease by `leaseDuration` (only while the lease has not lapsed). With no
    /// checkpoint pending, heartbeats stop working PROGRESS_TIMEOUT after the assignee's last progress (assignment,
    /// report or acceptance), so a provider that only heartbeats cannot hold a job forever: its lease lapses, anyone
    /// may unassign it, and the client may cancel.
    /// @param jobId The job.
    /// @param epoch The assignment's epoch (fencing token).
    function heartbeat(uint256 jobId, uint64 epoch) external;

    /// @notice The assignee reports a checkpoint's blob hash. `step` must be above the accepted step and at most
    /// one checkpoint interval past it. Extends the lease.
    /// @param jobId The job.
    /// @param epoch The assignment's epoch (fencing token).
    /// @param step The checkpoint's step.
    /// @param checkpointHash The checkpoint blob's hash (not zero).
    function reportCheckpoint(uint256 jobId, uint64 epoch, uint32 step, bytes32 checkpointHash) external;

    // ----- verifier multisig: called by the Safe itself, or by anyone carrying 2-of-3 owner signatures -----

    /// @notice Accepts the pending checkpoint and credits its steps to its reporter at the reporter's price, also
    /// after the reporter was unassigned (the job then resumes from it). Until reportedAt + DECISION_TIMEOUT.
    /// @dev Warning: trusts the verifier Safe; anyone may relay its owners' signatures.
    /// @param jobId The job.
    /// @param epoch The epoch the checkpoint was reported at.
    /// @param step The pending checkpoint's step.
    /// @param checkpointHash The pending checkpoint's hash.
    /// @param signatures Packed Safe owner signatures over `checkpointDecisionDigest(…, true)`; empty when the
    /// Safe calls itself.
    function acceptCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external;

    /// @notice Refuses the pending checkpoint without a proven fault (e.g. a missing blob): its reporter is fenced
    /// off the job (unassigned if it holds it), its stake lock released; nothing is slashed.
    /// @param jobId The job.
    /// @param epoch The epoch the checkpoint was reported at.
    /// @param step The pending checkpoint's step.
    /// @param checkpointHash The pending checkpoint's hash.
    /// @param signatures Packed Safe owner signatures over `checkpointDecisionDigest(…, false)`.
    function refuseCheckpoint(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        bytes calldata signatures
    ) external;

    /// @notice Refuses the pending checkpoint for a proven, deterministic fault: like `refuseCheckpoint`, and the
    /// reporter's lock on the job is slashed (split client / finder / fee recipient) and its unclaimed earnings on
    /// the job voided (returned to the budget). Happens at most once per lock.
    /// @dev Warning: trusts the verifier Safe's 2-of-3 signature over the fault, finder included.
    /// @param jobId The job.
    /// @param epoch The epoch the checkpoint was reported at.
    /// @param step The pending checkpoint's step.
    /// @param checkpointHash The pending checkpoint's hash.
    /// @param fault The proven fault (see Fault).
    /// @param signatures Packed Safe owner signatures over `faultRefusalDigest(…)`.
    function refuseWithFault(
        uint256 jobId,
        uint64 epoch,
        uint32 step,
        bytes32 checkpointHash,
        Fault calldata fault,
        bytes calldata signatures
    ) external;

    /// @notice Submits the verdict on the final model once every step is accepted. Opens the dispute window and
    /// bumps the epoch (the last assignee is fenced).
    /// @param jobId The job.
    /// @param modelHash The final accepted checkpoint's hash.
    /// @param metric The evaluation metric.
    /// @param passed Whether the model met the template's rules.
    /// @param signatures Packed Safe owner signatures over `verdictDigest(…)`.
    function submitVerdict(
        uint256 jobId,
        bytes32 modelHash,
        uint256 metric,
        bool passed,
        bytes calldata signatures
    ) external;

    // ----- arbiter -----

    /// @notice Decides a dispute until `openedAt + ARBITER_TIMEOUT` (inclusive). Upheld: the job's provider
    /// payments are void, the whole budget and the bond go back to the client. Rejected: the verdict stands and
    /// the bond goes to the fee recipient. Either way the job is settled.
    /// @dev Warning: the arbiter can void a job's payments or forfeit the client's bond.
    /// @param jobId The job.
    /// @param upheld True if the client was right.
    function resolveDispute(uint256 jobId, bool upheld) external;

    // ----- anyone -----

    /// @notice Settles a job whose dispute window passed, or whose arbiter stayed silent past the deadline
    /// (verdict stands, bond returned). Releases the unspent budget to the client's withdrawable balance.
    /// @param jobId The job.
    function settle(uint256 jobId) external;

    /// @notice Cancels an Open job that saw no acceptance for more than STALL_EXPIRY (`Job.stallSince`: its
    /// creation or its last accepted checkpoint), so that accepted earnings become claimable and the rest of the
    /// budget goes back to the client, even if nobody acts. The clock restarts only on an acceptance: reopening
    /// and assignment leave it, so a job bounced between Running and Open without accepted work still expires. A
    /// Running job is not expired (its holder may be mid-checkpoint); it becomes Open when its lease lapses
    /// (anyone may then `unassign`), when its checkpoint is refused or when the coordinator unassigns it, and is
    /// expirable at once from then on. A checkpoint still decidable blocks it (JobEscrowCheckpointPending).
    /// @param jobId The job.
    function expire(uint256 jobId) external;

    /// @notice Moves `provider`'s accepted earnings on a Settled or Cancelled job to its withdrawable balance.
    /// @param jobId The job.
    /// @param provider The provider (anyone may claim on its behalf; the money goes to the provider).
    function claimEarnings(uint256 jobId, address provider) external;

    /// @notice Pays the caller everything it is owed (pull payment).
    function withdraw() external;

    // ----- views -----

    /// @notice The job's status now, deriving Settleable and ArbiterTimedOut from the clock.
    /// @param jobId The job (None when unknown).
    function statusOf(uint256 jobId) external view returns (JobStatus);
    /// @notice The job as stored.
    /// @param jobId The job.
    function jobOf(uint256 jobId) external view returns (Job memory);
    /// @notice The job's verdict (zero before it is submitted).
    /// @param jobId The job.
    function verdictOf(uint256 jobId) external view returns (Verdict memory);
    /// @notice The job's dispute (zero when none).
    /// @param jobId The job.
    function disputeOf(uint256 jobId) external view returns (Dispute memory);
    /// @notice `provider`'s unclaimed earnings on the job (zero once a dispute is upheld).
    /// @param jobId The job.
    /// @param provider The provider.
    function earningsOf(uint256 jobId, address provider) external view returns (uint128);
    /// @notice Whether `provider` was refused on the job (it may never be assigned it again).
    /// @param jobId The job.
    /// @param provider The provider.
    function isFenced(uint256 jobId, address provider) external view returns (bool);
    /// @notice What `account` can withdraw now.
    /// @param account The account.
    function owed(address account) external view returns (uint256);
    /// @notice Proof of reserves of the escrow and the registry's stakes together: their token balances, and
    /// everything they owe (locked budgets, bonds, withdrawable balances, stakes). `held >= owes` after every
    /// transaction.
    /// @return held Test USDC held.
    /// @return owes Test USDC owed.
    function reserves() external view returns (uint256 held, uint256 owes);
}
