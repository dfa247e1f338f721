// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "../../../contracts/interfaces/IProviderRegistry.sol";
import {JobEscrow} from "../../../contracts/JobEscrow.sol";
import {ProviderRegistry} from "../../../contracts/ProviderRegistry.sol";
import {TestUSDC} from "../../../contracts/test/TestUSDC.sol";
import {VM, bound} from "../../fuzz/utils/Bound.sol";
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

/// @notice Drives random sequences of real calls on a real JobEscrow + ProviderRegistry + TestUSDC.
/// @dev The handler is the verifier Safe: the escrow is deployed with `verifierSafe = address(this)`, and a Safe
/// transaction reaches the escrow as a direct call from the Safe with empty signatures, which is what the handler
/// does. Every other role is a named address that the handler pranks as. Every action:
///  1. bounds its inputs and picks its job and actors from small fixed sets (at most `maxJobs` jobs),
///  2. predicts from the reference model (EscrowStore.GhostJob) whether the call must succeed,
///  3. makes the real call in try/catch and compares the outcome with the prediction,
///  4. on success applies the spec's effects to the model and checks the money that moved,
///  5. re-reads the job from the escrow and checks epoch, status transition and model agreement.
/// Time only moves through `warp`; every action first warps to the handler's clock, so time survives between
/// calls whatever the runner does with the block environment.
contract EscrowHandler is EscrowStore {
    /// @dev What an action looks for in a job (see `_pickJob`).
    enum Fit {
        Any,
        Open,
        Assignable, // Open, and some provider is eligible
        Stuck, // Open, and no provider is eligible (what a client would cancel)
        Running,
        Live, // Running with a live lease
        Reportable, // Live, nothing pending, steps left
        Pending, // Running with a pending checkpoint
        Trained, // Open or Running with every step accepted
        InDisputeWindow,
        Disputed,
        Settleable, // Settleable or ArbiterTimedOut
        Claimable // final, not upheld, some provider has unclaimed earnings
    }

    uint64 public constant LEASE = 1 hours;
    uint128 public constant BOND = 50e6;
    uint64 public constant ARBITER_TIMEOUT = 3 days;
    uint256 public constant N_CLIENTS = 3;
    uint256 public constant N_PROVIDERS = 4;
    bytes32 public constant TEMPLATE = keccak256("mnist-mlp-v1");

    address public constant OWNER = address(0x0A110000);
    address public constant COORDINATOR = address(0xC00D0000);
    address public constant ARBITER = address(0xA4B10000);
    address public constant FEE_RECIPIENT = address(0xFEE00000);
    address public constant STRANGER = address(0x57A40000);

    TestUSDC public usdc;
    ProviderRegistry public registry;
    JobEscrow public escrow;

    address[N_CLIENTS] internal _clients = [address(0xC1100001), address(0xC1100002), address(0xC1100003)];
    address[N_PROVIDERS] internal _providers =
        [address(0x9A000001), address(0x9A000002), address(0x9A000003), address(0x9A000004)];

    /// @notice At most this many jobs: 4 at the CI depth (100), so that a run's calls concentrate on few jobs and
    /// get them through their whole lifecycle; more for deeper runs (depth / 25, up to 20).
    uint256 public maxJobs;
    /// @notice The handler's clock (see `warp`).
    uint256 public currentTime;

    modifier useCurrentTime() {
        VM.warp(currentTime);
        _;
    }

    modifier instrument(bytes32 action) {
        ghost_calls[action] += 1;
        _;
    }

    constructor() {
        uint256 depth = VM.envOr("INVARIANT_DEPTH", uint256(100));
        maxJobs = depth / 25 < 4 ? 4 : depth / 25 > 20 ? 20 : depth / 25;
        currentTime = 1_750_000_000;
        VM.warp(currentTime);
        usdc = new TestUSDC();
        registry = new ProviderRegistry();
        escrow = new JobEscrow(
            usdc,
            registry,
            JobEscrow.Roles({
                owner: OWNER,
                coordinator: COORDINATOR,
                arbiter: ARBITER,
                feeRecipient: FEE_RECIPIENT,
                verifierSafe: address(this)
            }),
            LEASE,
            BOND
        );
        VM.prank(OWNER);
        escrow.setTemplateApproval(TEMPLATE, true);
        for (uint256 i = 0; i < N_CLIENTS; ++i) {
            VM.prank(_clients[i]);
            usdc.approve(address(escrow), type(uint256).max);
        }
        // Three providers start registered; the fourth waits for `registerProvider`.
        uint128[3] memory prices = [uint128(100), 400, 900];
        for (uint256 i = 0; i < 3; ++i) {
            VM.prank(_providers[i]);
            registry.register("provider", prices[i], IProviderRegistry.DeviceKind.GPU, "NVIDIA H200", 141_000);
            ghost_providers[_providers[i]] = GhostProvider({registered: true, active: true, price: prices[i]});
        }
        // Two jobs exist from the start, so that every run has work from its first call: one that every
        // registered provider can take, one whose budget only the cheapest provider fits.
        _createJob(_clients[0], IJobEscrow.JobRequest(TEMPLATE, 6, 3, 1000, 6000, 1 hours));
        _createJob(_clients[1], IJobEscrow.JobRequest(TEMPLATE, 4, 4, 500, 600, 1 days));
    }

    // ================================================================== client

    function createJob(
        uint256 clientSeed,
        uint256 stepsSeed,
        uint256 intervalSeed,
        uint256 priceSeed,
        uint256 budgetSeed,
        uint256 windowSeed
    ) external useCurrentTime instrument("createJob") {
        if (ghost_jobCount >= maxJobs) return;
        address client = _clients[clientSeed % N_CLIENTS];
        uint32 totalSteps = uint32(bound(stepsSeed, 1, 10));
        uint32 interval = uint32(bound(intervalSeed, (totalSteps + 2) / 3, totalSteps));
        uint128 maxPrice = uint128(bound(priceSeed, 1, 1000));
        uint256 fullPrice = uint256(totalSteps) * maxPrice;
        uint128 budget = uint128(bound(budgetSeed, (fullPrice + 1) / 2, 2 * fullPrice));
        uint64 window = uint64(bound(windowSeed, 1 minutes, 3 days));
        _createJob(
            client,
            IJobEscrow.JobRequest({
                templateId: TEMPLATE,
                totalSteps: totalSteps,
                checkpointInterval: interval,
                maxPricePerStep: maxPrice,
                budget: budget,
                disputeWindow: window
            })
        );
    }

    function cancel(uint256 jobSeed, uint256 callerSeed) external useCurrentTime instrument("cancel") {
        uint256 jobId = _pickJob(jobSeed, Fit.Stuck);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address caller = callerSeed % 5 == 0 ? _clients[(callerSeed / 5) % N_CLIENTS] : g.client;
        bool expected = _status(g) == OPEN && caller == g.client;
        uint256 owedBefore = escrow.owed(g.client);
        VM.prank(caller);
        try escrow.cancel(jobId) {
            if (!expected) {
                _unexpected("cancel succeeded");
                return;
            }
            g.phase = CANCELLED;
            _credit(g.client, owedBefore, g.budget - g.paid, "cancel: refund");
            ghost_successes["cancel"] += 1;
        } catch {
            if (expected) _unexpected("cancel reverted");
        }
        _record(jobId);
    }

    function dispute(uint256 jobSeed, uint256 callerSeed) external useCurrentTime instrument("dispute") {
        uint256 jobId = _pickJob(jobSeed, Fit.InDisputeWindow);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address caller = callerSeed % 5 == 0 ? _clients[(callerSeed / 5) % N_CLIENTS] : g.client;
        bool expected = _status(g) == DISPUTE_WINDOW && caller == g.client;
        usdc.mint(caller, BOND);
        uint256 held = usdc.balanceOf(address(escrow));
        VM.prank(caller);
        try escrow.dispute(jobId) {
            if (!expected) {
                _unexpected("dispute succeeded");
                return;
            }
            if (usdc.balanceOf(address(escrow)) != held + BOND) _unexpected("dispute: bond not pulled");
            g.phase = DISPUTED;
            g.disputedAt = uint64(currentTime);
            ghost_bondsPosted[jobId] += 1;
            ghost_bondsDeposited += BOND;
            ghost_successes["dispute"] += 1;
        } catch {
            if (expected) _unexpected("dispute reverted");
        }
        _record(jobId);
    }

    // ================================================================== providers (registry)

    function registerProvider(uint256 providerSeed, uint256 priceSeed, uint256 nameSeed)
        external
        useCurrentTime
        instrument("registerProvider")
    {
        address provider = _providers[providerSeed % N_PROVIDERS];
        uint128 price = uint128(bound(priceSeed, 1, 1200));
        bytes memory name = new bytes(bound(nameSeed, 1, 64));
        for (uint256 i = 0; i < name.length; ++i) {
            name[i] = "p";
        }
        bool expected = !ghost_providers[provider].registered;
        VM.prank(provider);
        try registry.register(string(name), price, IProviderRegistry.DeviceKind.CPU, "x86_64 CPU", 16_384) {
            if (!expected) {
                _unexpected("register succeeded twice");
                return;
            }
            ghost_providers[provider] = GhostProvider({registered: true, active: true, price: price});
        } catch {
            if (expected) _unexpected("register reverted");
        }
    }

    function updateProvider(uint256 providerSeed, uint256 priceSeed)
        external
        useCurrentTime
        instrument("updateProvider")
    {
        address provider = _providers[providerSeed % N_PROVIDERS];
        uint128 price = uint128(bound(priceSeed, 1, 1200));
        bool expected = ghost_providers[provider].registered;
        VM.prank(provider);
        try registry.update(price, IProviderRegistry.DeviceKind.GPU, "NVIDIA H200", 141_000) {
            if (!expected) {
                _unexpected("update succeeded unregistered");
                return;
            }
            ghost_providers[provider].price = price;
        } catch {
            if (expected) _unexpected("update reverted");
        }
    }

    function toggleProvider(uint256 providerSeed) external useCurrentTime instrument("toggleProvider") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        GhostProvider storage p = ghost_providers[provider];
        bool expected = p.registered;
        bool wasActive = p.active;
        bytes memory data = wasActive
            ? abi.encodeCall(IProviderRegistry.deactivate, ())
            : abi.encodeCall(IProviderRegistry.reactivate, ());
        VM.prank(provider);
        (bool success,) = address(registry).call(data);
        if (success && !expected) {
            _unexpected("toggle succeeded unregistered");
        } else if (success) {
            p.active = !wasActive;
        } else if (expected) {
            _unexpected("toggle reverted");
        }
    }

    // ================================================================== coordinator

    function assign(uint256 jobSeed, uint256 providerSeed) external useCurrentTime instrument("assign") {
        uint256 jobId = _pickJob(jobSeed, Fit.Assignable);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address provider = _pickProvider(jobId, providerSeed);
        GhostProvider memory p = ghost_providers[provider];
        bool expected = _status(g) == OPEN && _eligible(jobId, provider);
        VM.prank(COORDINATOR);
        try escrow.assign(jobId, provider) {
            if (!expected) {
                _unexpected(ghost_fenced[jobId][provider] ? "assign: fenced provider assigned" : "assign succeeded");
                return;
            }
            g.phase = RUNNING;
            g.epoch += 1;
            g.assignee = provider;
            g.price = p.price;
            g.lease = uint64(currentTime) + LEASE;
            g.progress = uint64(currentTime);
            ghost_successes["assign"] += 1;
        } catch {
            if (expected) _unexpected("assign reverted");
        }
        _record(jobId);
    }

    /// @dev The coordinator (one time in four) may unassign at any time; anyone else only once the lease lapsed.
    function unassign(uint256 jobSeed, uint256 callerSeed) external useCurrentTime instrument("unassign") {
        uint256 jobId = _pickJob(jobSeed, Fit.Running);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address caller = callerSeed % 4 == 0 ? COORDINATOR : _actor(callerSeed / 4);
        bool expected = _status(g) == RUNNING && (caller == COORDINATOR || currentTime > g.lease);
        VM.prank(caller);
        try escrow.unassign(jobId) {
            if (!expected) {
                _unexpected("unassign succeeded");
                return;
            }
            _reopen(g);
            bytes32 outcome = caller == COORDINATOR ? bytes32("unassign:coordinator") : bytes32("unassign:lapsed");
            ghost_successes[outcome] += 1;
        } catch {
            if (expected) _unexpected("unassign reverted");
        }
        _record(jobId);
    }

    // ================================================================== provider

    function heartbeat(uint256 jobSeed) external useCurrentTime instrument("heartbeat") {
        uint256 jobId = _pickJob(jobSeed, Fit.Live);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address sender = g.assignee == address(0) ? _providers[jobSeed % N_PROVIDERS] : g.assignee;
        uint64 epoch = g.epoch;
        bool live = _isLiveAssignee(g, sender, epoch);
        // A live assignee that made no progress for PROGRESS_TIMEOUT, with nothing pending, is refused.
        bool stalled = live && g.pending == 0 && currentTime > uint256(g.progress) + escrow.PROGRESS_TIMEOUT();
        VM.prank(sender);
        try escrow.heartbeat(jobId, epoch) {
            if (stalled) {
                _unexpected("heartbeat succeeded without progress");
                return;
            }
            if (!live) {
                _staleWriteSucceeded("heartbeat");
                return;
            }
            g.lease = uint64(currentTime) + LEASE;
        } catch {
            if (live && !stalled) _unexpected("heartbeat reverted");
        }
        _record(jobId);
    }

    /// @dev The honest path: the assignee reports a step in range (three times in four the furthest one allowed).
    function reportCheckpoint(uint256 jobSeed, uint256 stepSeed, uint256 hashSeed)
        external
        useCurrentTime
        instrument("reportCheckpoint")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Reportable);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address sender = g.assignee == address(0) ? _providers[jobSeed % N_PROVIDERS] : g.assignee;
        uint64 epoch = g.epoch;
        uint32 maxStep = _maxStep(g);
        uint32 step =
            stepSeed % 4 != 0 ? maxStep : uint32(bound(stepSeed / 4, g.accepted + 1, _max(maxStep, g.accepted + 1)));
        if (step == g.accepted) step += 1; // nothing left to report: the call must revert
        bytes32 checkpointHash = keccak256(abi.encode(jobId, step, hashSeed));
        bool live = _isLiveAssignee(g, sender, epoch);
        bool expected = live && g.pending == 0 && step <= maxStep;
        VM.prank(sender);
        try escrow.reportCheckpoint(jobId, epoch, step, checkpointHash) {
            if (!live) {
                _staleWriteSucceeded("reportCheckpoint");
                return;
            }
            if (!expected) {
                _unexpected("reportCheckpoint succeeded");
                return;
            }
            g.pending = step;
            g.pendingHash = checkpointHash;
            g.lease = uint64(currentTime) + LEASE;
            g.progress = uint64(currentTime);
            ghost_successes["reportCheckpoint"] += 1;
        } catch {
            if (expected) _unexpected("reportCheckpoint reverted");
        }
        _record(jobId);
    }

    /// @dev A worker that is not the live assignee of the current epoch tries to write: a provider that was
    /// unassigned, refused (fenced), never assigned, or whose lease lapsed, with the current or an old epoch, or
    /// the live assignee with an epoch that is not the current one. Every such write must revert.
    function staleWrite(uint256 jobSeed, uint256 providerSeed, uint256 epochSeed, uint256 stepSeed)
        external
        useCurrentTime
        instrument("staleWrite")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Any);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address sender = _providers[providerSeed % N_PROVIDERS];
        uint64 epoch = uint64(bound(epochSeed, 0, g.epoch + 1));
        if (_isLiveAssignee(g, sender, epoch)) epoch = epochSeed % 2 == 0 ? epoch + 1 : epoch - 1;
        uint32 step = g.accepted + 1;
        bool success;
        VM.prank(sender);
        if (stepSeed % 3 == 0) {
            try escrow.heartbeat(jobId, epoch) {
                success = true;
            } catch {}
        } else {
            try escrow.reportCheckpoint(jobId, epoch, step, keccak256(abi.encode("stale", stepSeed))) {
                success = true;
            } catch {}
        }
        if (success) _staleWriteSucceeded("staleWrite");
        else ghost_staleWritesReverted += 1;
        _record(jobId);
    }

    // ================================================================== verifier Safe (this contract)

    function acceptCheckpoint(uint256 jobSeed, uint256 stepSeed)
        external
        useCurrentTime
        instrument("acceptCheckpoint")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        bool expected = _status(g) == RUNNING && g.pending != 0;
        (uint32 step, bytes32 checkpointHash) =
            expected ? (g.pending, g.pendingHash) : (g.accepted + 1, keccak256(abi.encode(stepSeed)));
        address provider = g.assignee;
        uint256 earnedBefore = escrow.earningsOf(jobId, provider);
        try escrow.acceptCheckpoint(jobId, g.epoch, step, checkpointHash, "") {
            if (!expected) {
                _forgedDecisionSucceeded("acceptCheckpoint: nothing pending");
                return;
            }
            uint128 amount = uint128(step - g.accepted) * g.price;
            for (uint32 s = g.accepted + 1; s <= step; ++s) {
                if (ghost_stepPaid[jobId][s]) ghost_stepsPaidTwice += 1;
                ghost_stepPaid[jobId][s] = true;
            }
            if (escrow.earningsOf(jobId, provider) != earnedBefore + amount) {
                _unexpected("acceptCheckpoint: credited amount");
            }
            g.paid += amount;
            ghost_earned[jobId][provider] += amount;
            g.accepted = step;
            g.acceptedHash = checkpointHash;
            g.pending = 0;
            g.pendingHash = bytes32(0);
            g.lease = uint64(currentTime) + LEASE;
            g.progress = uint64(currentTime);
            ghost_successes["acceptCheckpoint"] += 1;
        } catch {
            if (expected) _unexpected("acceptCheckpoint reverted");
        }
        _record(jobId);
    }

    function refuseCheckpoint(uint256 jobSeed) external useCurrentTime instrument("refuseCheckpoint") {
        uint256 jobId = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        bool expected = _status(g) == RUNNING && g.pending != 0;
        (uint32 step, bytes32 checkpointHash) =
            expected ? (g.pending, g.pendingHash) : (g.accepted + 1, keccak256(abi.encode(jobSeed)));
        try escrow.refuseCheckpoint(jobId, g.epoch, step, checkpointHash, "") {
            if (!expected) {
                _forgedDecisionSucceeded("refuseCheckpoint: nothing pending");
                return;
            }
            ghost_fenced[jobId][g.assignee] = true;
            _reopen(g);
            ghost_successes["refuseCheckpoint"] += 1;
        } catch {
            if (expected) _unexpected("refuseCheckpoint reverted");
        }
        _record(jobId);
    }

    /// @dev A decision that must never pass: from someone other than the Safe with junk signatures, or from the
    /// Safe about a checkpoint that is not the pending one (old epoch, other step, other hash).
    function forgeDecision(uint256 jobSeed, uint256 modeSeed, bool accept)
        external
        useCurrentTime
        instrument("forgeDecision")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Pending);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        uint64 epoch = g.epoch;
        uint32 step = g.pending == 0 ? g.accepted + 1 : g.pending;
        bytes32 checkpointHash = g.pendingHash;
        bytes memory signatures;
        uint256 mode = modeSeed % 4;
        if (mode == 0) {
            signatures = abi.encodePacked(keccak256(abi.encode(modeSeed)), bytes32(modeSeed), uint8(27));
            VM.prank(_actor(modeSeed / 4));
        } else if (mode == 1) {
            epoch = epoch == 0 || modeSeed % 8 == 1 ? epoch + 1 : epoch - 1;
        } else if (mode == 2) {
            step = step == g.pending ? step + 1 : step;
        } else {
            checkpointHash = keccak256(abi.encode(checkpointHash));
        }
        bool success;
        if (accept) {
            try escrow.acceptCheckpoint(jobId, epoch, step, checkpointHash, signatures) {
                success = true;
            } catch {}
        } else {
            try escrow.refuseCheckpoint(jobId, epoch, step, checkpointHash, signatures) {
                success = true;
            } catch {}
        }
        if (success) _forgedDecisionSucceeded("forgeDecision");
        else ghost_forgedDecisionsReverted += 1;
        _record(jobId);
    }

    function submitVerdict(uint256 jobSeed, uint256 metricSeed, bool passed, uint256 hashSeed)
        external
        useCurrentTime
        instrument("submitVerdict")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Trained);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        bytes32 modelHash = hashSeed % 5 == 0 ? keccak256(abi.encode(hashSeed)) : g.acceptedHash;
        IJobEscrow.JobStatus status = _status(g);
        bool expected = (status == OPEN || status == RUNNING) && g.accepted == g.totalSteps
            && modelHash == g.acceptedHash;
        try escrow.submitVerdict(jobId, modelHash, bound(metricSeed, 0, 10_000), passed, "") {
            if (!expected) {
                _unexpected("submitVerdict succeeded");
                return;
            }
            g.phase = DISPUTE_WINDOW;
            g.epoch += 1;
            g.verdictAt = uint64(currentTime);
            ghost_successes["submitVerdict"] += 1;
        } catch {
            if (expected) _unexpected("submitVerdict reverted");
        }
        _record(jobId);
    }

    // ================================================================== arbiter

    function resolveDispute(uint256 jobSeed, bool upheld, uint256 callerSeed)
        external
        useCurrentTime
        instrument("resolveDispute")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Disputed);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address caller = callerSeed % 6 == 0 ? _actor(callerSeed / 6) : ARBITER;
        bool expected = _status(g) == DISPUTED && caller == ARBITER;
        uint256 clientBefore = escrow.owed(g.client);
        uint256 feeBefore = escrow.owed(FEE_RECIPIENT);
        VM.prank(caller);
        try escrow.resolveDispute(jobId, upheld) {
            if (!expected) {
                _unexpected("resolveDispute succeeded");
                return;
            }
            g.phase = SETTLED;
            if (upheld) {
                g.upheld = true;
                ghost_bondsReturned[jobId] += 1;
                _credit(g.client, clientBefore, g.budget + BOND, "resolveDispute(upheld): budget and bond");
                _credit(FEE_RECIPIENT, feeBefore, 0, "resolveDispute(upheld): fee recipient");
            } else {
                ghost_bondsForfeited[jobId] += 1;
                _credit(g.client, clientBefore, g.budget - g.paid, "resolveDispute(rejected): refund");
                _credit(FEE_RECIPIENT, feeBefore, BOND, "resolveDispute(rejected): bond");
            }
            ghost_successes[upheld ? bytes32("resolveDispute:upheld") : bytes32("resolveDispute:rejected")] += 1;
        } catch {
            if (expected) _unexpected("resolveDispute reverted");
        }
        _record(jobId);
    }

    // ================================================================== anyone

    function settle(uint256 jobSeed, uint256 callerSeed) external useCurrentTime instrument("settle") {
        uint256 jobId = _pickJob(jobSeed, Fit.Settleable);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        IJobEscrow.JobStatus status = _status(g);
        bool expected = status == SETTLEABLE || status == ARBITER_TIMED_OUT;
        uint256 clientBefore = escrow.owed(g.client);
        VM.prank(_actor(callerSeed));
        try escrow.settle(jobId) {
            if (!expected) {
                _unexpected("settle succeeded");
                return;
            }
            g.phase = SETTLED;
            uint256 bondReturned = 0;
            if (status == ARBITER_TIMED_OUT) {
                ghost_bondsReturned[jobId] += 1;
                bondReturned = BOND;
            }
            _credit(g.client, clientBefore, g.budget - g.paid + bondReturned, "settle: refund and bond");
            ghost_successes[status == SETTLEABLE ? bytes32("settle:window") : bytes32("settle:arbiterTimeout")] += 1;
        } catch {
            if (expected) _unexpected("settle reverted");
        }
        _record(jobId);
    }

    function claimEarnings(uint256 jobSeed, uint256 providerSeed, uint256 callerSeed)
        external
        useCurrentTime
        instrument("claimEarnings")
    {
        uint256 jobId = _pickJob(jobSeed, Fit.Claimable);
        if (jobId == 0) return;
        GhostJob storage g = _ghostJobs[jobId];
        address provider = _providers[(providerSeed / 8) % N_PROVIDERS];
        for (uint256 i = 0; i < N_PROVIDERS && providerSeed % 8 != 7; ++i) {
            address candidate = _providers[(providerSeed / 8 + i) % N_PROVIDERS];
            if (ghost_earned[jobId][candidate] > ghost_claimed[jobId][candidate]) {
                provider = candidate;
                break;
            }
        }
        IJobEscrow.JobStatus status = _status(g);
        uint256 unclaimed = ghost_earned[jobId][provider] - ghost_claimed[jobId][provider];
        bool expected = (status == SETTLED || status == CANCELLED) && !g.upheld && unclaimed > 0;
        uint256 owedBefore = escrow.owed(provider);
        VM.prank(_actor(callerSeed));
        try escrow.claimEarnings(jobId, provider) {
            if (!expected) {
                _unexpected("claimEarnings succeeded");
                return;
            }
            ghost_claimed[jobId][provider] += unclaimed;
            _credit(provider, owedBefore, unclaimed, "claimEarnings: amount");
            ghost_successes["claimEarnings"] += 1;
        } catch {
            if (expected) _unexpected("claimEarnings reverted");
        }
    }

    function withdraw(uint256 actorSeed) external useCurrentTime instrument("withdraw") {
        address account = _actor(actorSeed / 8);
        for (uint256 i = 0; i < N_CLIENTS + N_PROVIDERS + 2 && actorSeed % 8 != 7; ++i) {
            address candidate = _actor(actorSeed / 8 + i);
            if (ghost_owed[candidate] > 0) {
                account = candidate;
                break;
            }
        }
        uint256 amount = ghost_owed[account];
        bool expected = amount > 0;
        uint256 balanceBefore = usdc.balanceOf(account);
        VM.prank(account);
        try escrow.withdraw() {
            if (!expected) {
                _unexpected("withdraw succeeded");
                return;
            }
            if (usdc.balanceOf(account) != balanceBefore + amount) _unexpected("withdraw: amount paid");
            if (escrow.owed(account) != 0) _unexpected("withdraw: owed left");
            ghost_owed[account] = 0;
            ghost_withdrawn += amount;
            ghost_successes["withdraw"] += 1;
        } catch {
            if (expected) _unexpected("withdraw reverted");
        }
    }

    /// @dev Moves the clock. One time in four by 1 hour to 4 days (leases lapse, dispute windows of up to three
    /// days and the three-day arbiter timeout pass); one time in four exactly onto a job's next deadline or one
    /// second past it (lease expiry or progress timeout, end of the dispute window, arbiter deadline: all
    /// inclusive); otherwise by up to 45 minutes, under the one-hour lease. Time-derived statuses of every job are re-checked.
    function warp(uint256 secondsSeed) external instrument("warp") {
        uint256 mode = secondsSeed % 4;
        uint256 target = currentTime + bound(secondsSeed / 4, 1, 45 minutes);
        if (mode == 0) {
            target = currentTime + bound(secondsSeed / 4, 1 hours, 4 days);
        } else if (mode == 1) {
            uint256 deadline = _nextDeadline(secondsSeed / 8);
            if (deadline != 0) target = deadline + (secondsSeed / 4) % 2;
        }
        if (target > currentTime) currentTime = target;
        VM.warp(currentTime);
        for (uint256 jobId = 1; jobId <= ghost_jobCount; ++jobId) {
            _record(jobId);
        }
    }

    /// @dev The first deadline still ahead (or now) among the jobs, scanning from a random one; 0 if none.
    function _nextDeadline(uint256 seed) internal view returns (uint256) {
        uint256 n = ghost_jobCount;
        for (uint256 i = 0; i < n; ++i) {
            GhostJob storage g = _ghostJobs[(seed + i) % n + 1];
            uint256 deadline;
            if (g.phase == RUNNING) {
                deadline = g.lease;
                uint256 stall = uint256(g.progress) + escrow.PROGRESS_TIMEOUT();
                if (g.pending == 0 && stall < deadline) deadline = stall;
            } else if (g.phase == DISPUTE_WINDOW) {
                deadline = uint256(g.verdictAt) + g.disputeWindow;
            } else if (g.phase == DISPUTED) {
                deadline = uint256(g.disputedAt) + ARBITER_TIMEOUT;
            }
            if (deadline >= currentTime) return deadline;
        }
        return 0;
    }

    /// @dev Someone sends test USDC straight to the escrow. The escrow owes it to no one: held > owes afterwards.
    function donate(uint256 amountSeed) external useCurrentTime instrument("donate") {
        uint256 amount = bound(amountSeed, 1, 1e6);
        usdc.mint(STRANGER, amount);
        VM.prank(STRANGER);
        usdc.transfer(address(escrow), amount);
        ghost_donated += amount;
    }

    // ================================================================== views for the invariants

    /// @notice Every account that can ever be owed or hold test USDC in this campaign.
    function actors() external view returns (address[] memory list) {
        list = new address[](N_CLIENTS + N_PROVIDERS + 2);
        for (uint256 i = 0; i < N_CLIENTS; ++i) {
            list[i] = _clients[i];
        }
        for (uint256 i = 0; i < N_PROVIDERS; ++i) {
            list[N_CLIENTS + i] = _providers[i];
        }
        list[N_CLIENTS + N_PROVIDERS] = FEE_RECIPIENT;
        list[N_CLIENTS + N_PROVIDERS + 1] = STRANGER;
    }

    function providers() external view returns (address[N_PROVIDERS] memory) {
        return _providers;
    }

    /// @notice The status the model expects for `jobId` now.
    function modelStatus(uint256 jobId) external view returns (IJobEscrow.JobStatus) {
        return _status(_ghostJobs[jobId]);
    }

    // ================================================================== internals

    function _createJob(address client, IJobEscrow.JobRequest memory request) internal {
        usdc.mint(client, request.budget);
        VM.prank(client);
        try escrow.createJob(request) returns (uint256 jobId) {
            if (jobId != ghost_jobCount + 1) _unexpected("createJob: job ids are not sequential");
            ghost_jobCount = jobId;
            ghost_budgetsDeposited += request.budget;
            GhostJob storage g = _ghostJobs[jobId];
            g.client = client;
            g.totalSteps = request.totalSteps;
            g.interval = request.checkpointInterval;
            g.maxPrice = request.maxPricePerStep;
            g.budget = request.budget;
            g.disputeWindow = request.disputeWindow;
            g.phase = OPEN;
            _record(jobId);
        } catch {
            _unexpected("createJob reverted");
        }
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

    function _reopen(GhostJob storage g) internal {
        g.phase = OPEN;
        g.epoch += 1;
        g.assignee = address(0);
        g.price = 0;
        g.lease = 0;
        g.progress = 0;
        g.pending = 0;
        g.pendingHash = bytes32(0);
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
    function _pickJob(uint256 seed, Fit fit) internal view returns (uint256) {
        uint256 n = ghost_jobCount;
        if (n == 0) return 0;
        uint256 start = (seed / 8) % n;
        if (seed % 8 == 7 || fit == Fit.Any) return start + 1;
        for (uint256 i = 0; i < n; ++i) {
            uint256 jobId = (start + i) % n + 1;
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
        if (fit == Fit.Stuck) return status == OPEN && !_fits(jobId, Fit.Assignable);
        if (fit == Fit.Running) return status == RUNNING;
        if (fit == Fit.Live) return status == RUNNING && currentTime <= g.lease;
        if (fit == Fit.Reportable) {
            return status == RUNNING && currentTime <= g.lease && g.pending == 0 && g.accepted < g.totalSteps;
        }
        if (fit == Fit.Pending) return status == RUNNING && g.pending != 0;
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
        return p.active && !ghost_fenced[jobId][provider] && p.price <= g.maxPrice
            && uint256(g.totalSteps - g.accepted) * p.price <= g.budget - g.paid;
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

    /// @dev Any of the accounts that take part (clients, providers, fee recipient, a stranger).
    function _actor(uint256 seed) internal view returns (address) {
        uint256 i = seed % (N_CLIENTS + N_PROVIDERS + 2);
        if (i < N_CLIENTS) return _clients[i];
        if (i < N_CLIENTS + N_PROVIDERS) return _providers[i - N_CLIENTS];
        return i == N_CLIENTS + N_PROVIDERS ? FEE_RECIPIENT : STRANGER;
    }

    function _max(uint32 a, uint32 b) internal pure returns (uint32) {
        return a > b ? a : b;
    }
}
