// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IProviderRegistry} from "../../../contracts/interfaces/IProviderRegistry.sol";
import {VM, bound} from "../../fuzz/utils/Bound.sol";
import {HandlerBase} from "./HandlerBase.sol";

/// @notice The providers' calls: their registry record, heartbeats and reports, and writes by stale workers.
abstract contract ProviderActions is HandlerBase {
    function registerProvider(
        uint256 providerSeed,
        uint256 priceSeed,
        uint256 nameSeed
    ) external action("registerProvider") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        uint128 price = uint128(bound(priceSeed, 1, 1200));
        bytes memory name = new bytes(bound(nameSeed, 1, 64));
        for (uint256 i = 0; i < name.length; ++i) {
            name[i] = "p";
        }
        bool expected = !ghost_providers[provider].registered;
        bytes memory data = abi.encodeCall(
            registry.register,
            (string(name), price, IProviderRegistry.DeviceKind.CPU, "x86_64 CPU", 16_384)
        );
        if (_call(provider, address(registry), data, expected, "register")) {
            ghost_providers[provider] = GhostProvider({registered: true, active: true, price: price});
        }
    }

    function updateProvider(uint256 providerSeed, uint256 priceSeed) external action("updateProvider") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        uint128 price = uint128(bound(priceSeed, 1, 1200));
        bool expected = ghost_providers[provider].registered;
        bytes memory data = abi.encodeCall(
            registry.update,
            (price, IProviderRegistry.DeviceKind.GPU, "NVIDIA H200", 141_000)
        );
        if (_call(provider, address(registry), data, expected, "update")) ghost_providers[provider].price = price;
    }

    function toggleProvider(uint256 providerSeed) external action("toggleProvider") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        GhostProvider storage p = ghost_providers[provider];
        bytes memory data =
            p.active
                ? abi.encodeCall(IProviderRegistry.deactivate, ())
                : abi.encodeCall(IProviderRegistry.reactivate, ());
        if (_call(provider, address(registry), data, p.registered, "toggle")) p.active = !p.active;
    }

    function heartbeat(uint256 jobSeed) external action("heartbeat") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Live);
        if (jobId == 0) return;
        address sender = g.assignee == address(0) ? _providers[jobSeed % N_PROVIDERS] : g.assignee;
        uint64 epoch = g.epoch;
        bool live = _isLiveAssignee(g, sender, epoch);
        // A live assignee that made no progress within its job's timeout, with nothing decidable, is refused.
        bool stalled = live && (_ownReportLapsed(g, epoch) || (!_pendingLive(g) && currentTime > _stalledAfter(g)));
        (bool ok, ) = _rawCall(sender, address(escrow), abi.encodeCall(escrow.heartbeat, (jobId, epoch)));
        if (ok && !live) _staleWriteSucceeded("heartbeat");
        else if (ok && stalled) _unexpected("heartbeat succeeded without progress");
        else if (ok) g.lease = uint64(currentTime) + LEASE;
        else if (live && !stalled) _unexpected("heartbeat reverted");
        _record(jobId);
    }

    /// @dev The honest path: the assignee reports a step in range (three times in four the furthest one allowed).
    function reportCheckpoint(uint256 jobSeed, uint256 stepSeed, uint256 hashSeed) external action("reportCheckpoint") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Reportable);
        if (jobId == 0) return;
        address sender = g.assignee == address(0) ? _providers[jobSeed % N_PROVIDERS] : g.assignee;
        uint64 epoch = g.epoch;
        uint32 maxStep = _maxStep(g);
        uint32 step =
            stepSeed % 4 != 0 ? maxStep : uint32(bound(stepSeed / 4, g.accepted + 1, _max(maxStep, g.accepted + 1)));
        if (step == g.accepted) step += 1; // nothing left to report: the call must revert
        bytes32 checkpointHash = keccak256(abi.encode(jobId, step, hashSeed));
        bool live = _isLiveAssignee(g, sender, epoch);
        bool expected = live && !_pendingLive(g) && !_ownReportLapsed(g, epoch) && step <= maxStep;
        bytes memory data = abi.encodeCall(escrow.reportCheckpoint, (jobId, epoch, step, checkpointHash));
        (bool ok, ) = _rawCall(sender, address(escrow), data);
        if (ok && !live) {
            _staleWriteSucceeded("reportCheckpoint");
        } else if (ok != expected) {
            _unexpected(ok ? "reportCheckpoint succeeded" : "reportCheckpoint reverted");
        } else if (ok) {
            _dropLapsed(jobId, g);
            g.pending = step;
            g.pendingHash = checkpointHash;
            g.pendingProvider = sender;
            g.pendingEpoch = epoch;
            g.pendingPrice = g.price;
            g.reportedAt = uint64(currentTime);
            g.pendingFabricated = hashSeed % 4 == 0; // one report in four makes a step up
            g.lease = uint64(currentTime) + LEASE;
            g.progress = uint64(currentTime);
            _succeeded("reportCheckpoint");
        }
        _record(jobId);
    }

    // ------------------------------------------------------------------ stake

    function depositStake(uint256 providerSeed, uint256 amountSeed) external action("depositStake") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        uint128 amount = uint128(bound(amountSeed, 0, 20_000)); // zero must revert
        usdc.mint(provider, amount);
        VM.prank(provider);
        usdc.approve(address(registry), amount);
        bool expected = ghost_providers[provider].registered && amount > 0;
        bytes memory data = abi.encodeCall(registry.depositStake, (amount));
        if (_call(provider, address(registry), data, expected, "depositStake")) {
            _ghostStakes[provider].deposited += amount;
            ghost_stakeDeposited += amount;
            _succeeded("depositStake");
        }
    }

    function requestUnbond(uint256 providerSeed, uint256 amountSeed) external action("requestUnbond") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        uint128 free = _freeStake(provider);
        // Mostly some of the free stake; sometimes one unit more than is free (must revert).
        uint128 amount = amountSeed % 8 == 7 ? free + 1 : uint128(bound(amountSeed / 8, 1, free == 0 ? 1 : free));
        bool expected = amount <= free;
        bytes memory data = abi.encodeCall(registry.requestUnbond, (amount));
        if (_call(provider, address(registry), data, expected, "requestUnbond")) {
            GhostStake storage st = _ghostStakes[provider];
            st.unbonding += amount;
            st.readyAt = uint64(currentTime) + UNBONDING;
            _succeeded("requestUnbond");
        }
    }

    function withdrawStake(uint256 providerSeed) external action("withdrawStake") {
        address provider = _providers[providerSeed % N_PROVIDERS];
        GhostStake storage st = _ghostStakes[provider];
        uint128 amount = st.unbonding;
        bool expected = amount > 0 && currentTime >= st.readyAt;
        uint256 balanceBefore = usdc.balanceOf(provider);
        bytes memory data = abi.encodeCall(registry.withdrawStake, ());
        if (_call(provider, address(registry), data, expected, "withdrawStake")) {
            if (usdc.balanceOf(provider) != balanceBefore + amount) _unexpected("withdrawStake: amount paid");
            st.deposited -= amount;
            st.unbonding = 0;
            st.readyAt = 0;
            ghost_stakeWithdrawn += amount;
            _succeeded("withdrawStake");
        }
    }

    /// @dev A worker that is not the live assignee of the current epoch tries to write: a provider that was
    /// unassigned, refused (fenced), never assigned, or whose lease lapsed, with the current or an old epoch, or
    /// the live assignee with an epoch that is not the current one. Every such write must revert.
    function staleWrite(
        uint256 jobSeed,
        uint256 providerSeed,
        uint256 epochSeed,
        uint256 stepSeed
    ) external action("staleWrite") {
        (uint256 jobId, GhostJob storage g) = _pickJob(jobSeed, Fit.Any);
        if (jobId == 0) return;
        address sender = _providers[providerSeed % N_PROVIDERS];
        uint64 epoch = uint64(bound(epochSeed, 0, g.epoch + 1));
        if (_isLiveAssignee(g, sender, epoch)) epoch = epochSeed % 2 == 0 ? epoch + 1 : epoch - 1;
        bytes memory data =
            stepSeed % 3 == 0
                ? abi.encodeCall(escrow.heartbeat, (jobId, epoch))
                : abi.encodeCall(
                    escrow.reportCheckpoint,
                    (jobId, epoch, g.accepted + 1, keccak256(abi.encode("stale", stepSeed)))
                );
        (bool ok, ) = _rawCall(sender, address(escrow), data);
        if (ok) _staleWriteSucceeded("staleWrite");
        else ghost_staleWritesReverted += 1;
        _record(jobId);
    }
}
