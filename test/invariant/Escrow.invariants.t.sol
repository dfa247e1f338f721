// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {console} from "hardhat/console.sol";
import {IJobEscrow} from "../../contracts/interfaces/IJobEscrow.sol";
import {JobEscrow} from "../../contracts/JobEscrow.sol";
import {IProviderRegistry} from "../../contracts/interfaces/IProviderRegistry.sol";
import {ProviderRegistry} from "../../contracts/ProviderRegistry.sol";
import {TestUSDC} from "../../contracts/test/TestUSDC.sol";
import {EscrowHandler} from "./handlers/EscrowHandler.sol";
import {SETTLED, CANCELLED} from "./handlers/HandlerBase.sol";
import {EscrowStore} from "./handlers/EscrowStore.sol";
import {InvariantTest} from "./utils/InvariantTest.sol";

/// @notice Invariants of JobEscrow + ProviderRegistry + TestUSDC under random sequences of real calls.
/// Each `invariant_…` is one campaign of `runs` × `depth` handler calls, checked after every call.
/// Plain-words list and the handler's actions: test/invariant/README.md.
contract EscrowInvariants is InvariantTest {
    EscrowHandler internal handler;
    JobEscrow internal escrow;
    ProviderRegistry internal registry;
    TestUSDC internal usdc;

    function setUp() public {
        handler = new EscrowHandler();
        escrow = handler.escrow();
        registry = handler.registry();
        usdc = handler.usdc();

        targetContract(address(handler));
        // The runner picks uniformly among the listed selectors, so listing one n times gives it weight n: the
        // steps a job needs to get through its lifecycle come up more often than the rare ones.
        _weigh(handler.createJob.selector, 2);
        _weigh(handler.cancel.selector, 1);
        _weigh(handler.dispute.selector, 2);
        _weigh(handler.registerProvider.selector, 1);
        _weigh(handler.updateProvider.selector, 1);
        _weigh(handler.toggleProvider.selector, 1);
        _weigh(handler.assign.selector, 4);
        _weigh(handler.unassign.selector, 2);
        _weigh(handler.heartbeat.selector, 2);
        _weigh(handler.reportCheckpoint.selector, 6);
        _weigh(handler.staleWrite.selector, 2);
        _weigh(handler.acceptCheckpoint.selector, 6);
        _weigh(handler.refuseCheckpoint.selector, 1);
        _weigh(handler.forgeDecision.selector, 2);
        _weigh(handler.submitVerdict.selector, 3);
        _weigh(handler.resolveDispute.selector, 2);
        _weigh(handler.settle.selector, 3);
        _weigh(handler.claimEarnings.selector, 3);
        _weigh(handler.withdraw.selector, 3);
        _weigh(handler.warp.selector, 4);
        _weigh(handler.donate.selector, 1);
        _weigh(handler.depositStake.selector, 2);
        _weigh(handler.requestUnbond.selector, 1);
        _weigh(handler.withdrawStake.selector, 1);
        _weigh(handler.refuseWithFault.selector, 2);
        _weigh(handler.expire.selector, 1);
        _weigh(handler.setStepBound.selector, 1);
        targetSelector(FuzzSelector({addr: address(handler), selectors: _selectors}));
    }

    bytes4[] private _selectors;

    function _weigh(bytes4 selector, uint256 weight) private {
        for (uint256 i = 0; i < weight; ++i) {
            _selectors.push(selector);
        }
    }

    /// @dev Views that derive statuses from the clock must see the handler's clock.
    modifier atHandlerTime() {
        vm.warp(handler.currentTime());
        _;
    }

    /// @notice Proof of reserves with stakes: the escrow and the registry together hold at least what they owe
    /// (locked budgets, bonds, withdrawable balances, stakes), and exactly that plus whatever was sent to the
    /// escrow by plain transfer; the registry alone holds exactly its stakes.
    function invariant_reservesCoverWhatIsOwed() public {
        (uint256 held, uint256 owes) = escrow.reserves();
        assertGte(held, owes, "held < owes");
        uint256 stakes = registry.totalStaked();
        assertEq(owes, escrow.totalLocked() + escrow.totalBonds() + escrow.totalWithdrawable() + stakes, "owes");
        assertEq(held, owes + handler.ghost_donated(), "held != owes + donations");
        assertEq(usdc.balanceOf(address(registry)), stakes, "registry balance != stakes");
    }

    /// @notice USDC is conserved: everything deposited (budgets, bonds, stakes, plain transfers) is either
    /// withdrawn or still in the escrow or the registry, and no test USDC ever reaches an account outside the
    /// campaign.
    function invariant_usdcIsConserved() public {
        uint256 balance = usdc.balanceOf(address(escrow)) + usdc.balanceOf(address(registry));
        uint256 deposited =
            handler.ghost_budgetsDeposited() +
                handler.ghost_bondsDeposited() +
                handler.ghost_donated() +
                handler.ghost_stakeDeposited();
        uint256 withdrawn = handler.ghost_withdrawn() + handler.ghost_stakeWithdrawn();
        assertEq(balance + withdrawn, deposited, "deposited != withdrawn + balance");
        address[] memory actors = handler.actors();
        uint256 outside = 0;
        for (uint256 i = 0; i < actors.length; ++i) {
            outside += usdc.balanceOf(actors[i]);
        }
        assertEq(usdc.totalSupply(), balance + outside, "supply leaked to an unknown account");
    }

    /// @notice The per-account balances add up to `totalWithdrawable`, and each equals the model's.
    function invariant_owedSumsToTotalWithdrawable() public {
        address[] memory actors = handler.actors();
        uint256 sum = 0;
        for (uint256 i = 0; i < actors.length; ++i) {
            uint256 owed = escrow.owed(actors[i]);
            assertEq(owed, handler.ghost_owed(actors[i]), "owed != model");
            sum += owed;
        }
        assertEq(sum, escrow.totalWithdrawable(), "sum of owed != totalWithdrawable");
    }

    /// @notice No (job, step) is paid twice; the steps paid are exactly 1..acceptedStep; a job never credits more
    /// than its budget.
    function invariant_noStepPaidTwiceAndPaidWithinBudget() public {
        assertEq(handler.ghost_stepsPaidTwice(), 0, "a step was paid twice");
        uint256 jobCount = escrow.jobCount();
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            IJobEscrow.Job memory job = escrow.jobOf(jobId);
            EscrowStore.GhostJob memory g = handler.ghostJob(jobId);
            assertLte(job.paid, job.budget, "paid > budget");
            assertLte(g.paid, g.budget, "credited > budget");
            for (uint32 step = 1; step <= job.totalSteps; ++step) {
                assertEq(handler.ghost_stepPaid(jobId, step), step <= job.acceptedStep, "paid steps != 1..accepted");
            }
        }
    }

    /// @notice Σ stakes is conserved: the registry's total is exactly deposits − withdrawals − slashes − probation
    /// forfeits, and each
    /// provider's stake equals the model's.
    function invariant_stakesAreConserved() public {
        uint256 expected =
            handler.ghost_stakeDeposited() -
                handler.ghost_stakeWithdrawn() -
                handler.ghost_stakeSlashed() -
                handler.ghost_stakeForfeited();
        assertEq(registry.totalStaked(), expected, "totalStaked != deposited - withdrawn - slashed - forfeited");
        address[4] memory providers = handler.providers();
        uint256 sum = 0;
        for (uint256 i = 0; i < providers.length; ++i) {
            IProviderRegistry.Stake memory st = registry.stakeOf(providers[i]);
            EscrowStore.GhostStake memory g = handler.ghostStake(providers[i]);
            assertEq(st.deposited, g.deposited, "deposited != model");
            assertEq(st.locked, g.locked, "locked != model");
            assertEq(st.unbonding, g.unbonding, "unbonding != model");
            sum += st.deposited;
        }
        assertEq(sum, registry.totalStaked(), "sum of deposits != totalStaked");
    }

    /// @notice Locked stake never exceeds what was deposited: locked + unbonding <= deposited for every provider,
    /// and its locked stake is exactly the sum of its per-job locks.
    function invariant_lockedWithinDeposited() public {
        uint256 jobCount = escrow.jobCount();
        address[4] memory providers = handler.providers();
        for (uint256 i = 0; i < providers.length; ++i) {
            IProviderRegistry.Stake memory st = registry.stakeOf(providers[i]);
            assertLte(uint256(st.locked) + st.unbonding, st.deposited, "locked + unbonding > deposited");
            uint256 locks = 0;
            for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
                locks += registry.lockOf(providers[i], jobId);
            }
            assertEq(locks, st.locked, "sum of job locks != locked");
        }
    }

    /// @notice No lock is slashed twice, and no provider is ever slashed for a checkpoint it did not fabricate.
    function invariant_neverSlashedTwiceNorHonestly() public {
        assertEq(handler.ghost_honestSlashed(), 0, "an honest provider was slashed");
        uint256 jobCount = escrow.jobCount();
        address[4] memory providers = handler.providers();
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            for (uint256 i = 0; i < providers.length; ++i) {
                assertLte(handler.ghost_slashes(jobId, providers[i]), 1, "slashed twice on one job");
            }
        }
    }

    /// @notice Probation ends exactly at a provider's first accepted checkpoint, and never comes back: the escrow's
    /// `isProven` equals the model's for every provider (the stake books above then show that only providers on
    /// probation forfeited, and each forfeit went to its job's client).
    function invariant_probationEndsOnlyAtAnAcceptance() public {
        address[4] memory providers = handler.providers();
        for (uint256 i = 0; i < providers.length; ++i) {
            assertEq(escrow.isProven(providers[i]), handler.ghost_proven(providers[i]), "isProven != model");
        }
    }

    /// @notice Every job's epoch (fencing token) only ever increases.
    function invariant_epochsOnlyIncrease() public {
        assertEq(handler.ghost_epochDecreases(), 0, "an epoch decreased");
        uint256 jobCount = escrow.jobCount();
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            assertGte(escrow.jobOf(jobId).epoch, handler.ghost_lastEpoch(jobId), "epoch below last seen");
        }
    }

    /// @notice Only the live assignee of the current epoch ever wrote (reported or heartbeat): every write by a
    /// stale, fenced, unassigned or lapsed worker reverted, no checkpoint decision passed that was not the Safe's
    /// about the pending checkpoint, and every refused provider is still fenced off its job.
    function invariant_onlyCurrentAssigneeWrites() public {
        assertEq(handler.ghost_staleWritesSucceeded(), 0, "a stale worker wrote");
        assertEq(handler.ghost_forgedDecisionsSucceeded(), 0, "a forged decision passed");
        // A refused provider stays fenced off its job for good.
        uint256 jobCount = escrow.jobCount();
        address[4] memory providers = handler.providers();
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            for (uint256 i = 0; i < providers.length; ++i) {
                assertEq(escrow.isFenced(jobId, providers[i]), handler.ghost_fenced(jobId, providers[i]), "fenced");
            }
        }
    }

    /// @notice Settled and Cancelled never change; every other status moves only along the lifecycle.
    function invariant_terminalStatusesNeverChange() public atHandlerTime {
        assertEq(handler.ghost_terminalStatusChanges(), 0, "a terminal status changed");
        assertEq(handler.ghost_illegalTransitions(), 0, "a status moved against the lifecycle");
        uint256 jobCount = escrow.jobCount();
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            IJobEscrow.JobStatus last = handler.ghost_lastStatus(jobId);
            if (last == SETTLED || last == CANCELLED) {
                assertEq(uint8(escrow.statusOf(jobId)), uint8(last), "terminal status changed");
            }
        }
    }

    /// @notice A dispute bond is returned or forfeited exactly once, when the disputed job settles; bonds held
    /// equal those of the open disputes.
    function invariant_bondReturnedOrForfeitedExactlyOnce() public atHandlerTime {
        uint256 jobCount = escrow.jobCount();
        uint256 open = 0;
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            uint256 posted = handler.ghost_bondsPosted(jobId);
            uint256 closed = handler.ghost_bondsReturned(jobId) + handler.ghost_bondsForfeited(jobId);
            assertLte(posted, 1, "two bonds on one job");
            assertLte(closed, posted, "bond closed more than posted");
            IJobEscrow.Dispute memory d = escrow.disputeOf(jobId);
            assertEq(d.bond, posted * handler.BOND(), "bond on record");
            assertEq(d.resolved, closed == 1, "resolved flag");
            if (escrow.statusOf(jobId) == SETTLED) assertEq(closed, posted, "settled with the bond still held");
            else assertEq(closed, 0, "bond closed before settlement");
            open += posted - closed;
        }
        assertEq(escrow.totalBonds(), open * handler.BOND(), "totalBonds != open disputes' bonds");
    }

    /// @notice `totalLocked` is exactly the budgets of the jobs not yet final plus the unclaimed earnings on final
    /// ones (zero where a dispute was upheld); each provider's earnings are what it was credited less what it
    /// claimed.
    function invariant_lockedIsLiveBudgetsPlusUnclaimedEarnings() public atHandlerTime {
        uint256 jobCount = escrow.jobCount();
        address[4] memory providers = handler.providers();
        uint256 locked = 0;
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            EscrowStore.GhostJob memory g = handler.ghostJob(jobId);
            IJobEscrow.JobStatus status = escrow.statusOf(jobId);
            bool final_ = status == SETTLED || status == CANCELLED;
            if (!final_) locked += g.budget;
            for (uint256 i = 0; i < providers.length; ++i) {
                uint256 unclaimed =
                    g.upheld
                        ? 0
                        : handler.ghost_earned(jobId, providers[i]) - handler.ghost_claimed(jobId, providers[i]);
                assertEq(escrow.earningsOf(jobId, providers[i]), unclaimed, "earnings != credited - claimed");
                if (final_) locked += unclaimed;
            }
        }
        assertEq(escrow.totalLocked(), locked, "totalLocked");
    }

    /// @notice Every call the handler made succeeded or reverted exactly as the spec (the reference model)
    /// predicts, moved exactly the predicted amounts, and left the escrow agreeing with the model.
    function invariant_callsBehaveAsSpecified() public {
        assertEq(handler.ghost_unexpectedOutcomes(), 0, handler.ghost_firstUnexpected());
    }

    /// @notice After each run: what the run reached, as one `coverage …` line (in the last run's trace at
    /// `--verbosity 5`). Not an assertion. With ESCROW_COVERAGE=1 the counters add up across the runs of a campaign
    /// (kept in environment variables, so run one invariant at a time, e.g. `--grep callsBehave`): the last line
    /// then holds the campaign's totals. docs/INVARIANTS.md has the command and the figures.
    function afterInvariant() public {
        string[26] memory actions = [
            "createJob",
            "cancel",
            "dispute",
            "registerProvider",
            "updateProvider",
            "toggleProvider",
            "assign",
            "unassign",
            "heartbeat",
            "reportCheckpoint",
            "staleWrite",
            "acceptCheckpoint",
            "refuseCheckpoint",
            "forgeDecision",
            "submitVerdict",
            "resolveDispute",
            "settle",
            "claimEarnings",
            "withdraw",
            "warp",
            "donate",
            "depositStake",
            "requestUnbond",
            "withdrawStake",
            "refuseWithFault",
            "expire"
        ];
        string[22] memory outcomes = [
            "assign",
            "unassign:coordinator",
            "unassign:lapsed",
            "reportCheckpoint",
            "acceptCheckpoint",
            "refuseCheckpoint",
            "submitVerdict",
            "dispute",
            "resolveDispute:upheld",
            "resolveDispute:rejected",
            "settle:window",
            "settle:arbiterTimeout",
            "cancel",
            "claimEarnings",
            "withdraw",
            "acceptCheckpoint:orphan",
            "refuseWithFault",
            "expire",
            "depositStake",
            "requestUnbond",
            "withdrawStake",
            "lapsedCheckpoints"
        ];
        bool sum = vm.envOr("ESCROW_COVERAGE", false);
        string memory line = string.concat("coverage", _counter(sum, "runs", 1));
        for (uint256 i = 0; i < actions.length; ++i) {
            uint256 calls = handler.ghost_calls(bytes32(bytes(actions[i])));
            line = string.concat(line, _counter(sum, string.concat("calls.", actions[i]), calls));
        }
        for (uint256 i = 0; i < outcomes.length; ++i) {
            uint256 successes = handler.ghost_successes(bytes32(bytes(outcomes[i])));
            line = string.concat(line, _counter(sum, string.concat("ok.", outcomes[i]), successes));
        }
        line = string.concat(
            line,
            _counter(sum, "staleWritesReverted", handler.ghost_staleWritesReverted()),
            _counter(sum, "forgedDecisionsReverted", handler.ghost_forgedDecisionsReverted())
        );
        vm.warp(handler.currentTime());
        uint256 settled = 0;
        uint256 cancelled = 0;
        uint256 jobCount = escrow.jobCount();
        for (uint256 jobId = 1; jobId <= jobCount; ++jobId) {
            IJobEscrow.JobStatus status = escrow.statusOf(jobId);
            if (status == SETTLED) settled += 1;
            if (status == CANCELLED) cancelled += 1;
        }
        line = string.concat(
            line,
            _counter(sum, "jobs", jobCount),
            _counter(sum, "jobsSettled", settled),
            _counter(sum, "jobsCancelled", cancelled),
            _counter(sum, "runsWithASettledJob", settled > 0 ? 1 : 0)
        );
        console.log(line);
    }

    /// @dev " key=value", where value adds up across runs (in the environment) when `sum` is set.
    function _counter(bool sum, string memory key, uint256 value) private returns (string memory) {
        if (sum) {
            string memory name = string.concat("ESCROW_COVERAGE_", vm.toString(uint256(keccak256(bytes(key))) >> 192));
            value += vm.envOr(name, uint256(0));
            vm.setEnv(name, vm.toString(value));
        }
        return string.concat(" ", key, "=", vm.toString(value));
    }
}
