// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {IProviderRegistry} from "../../../contracts/interfaces/IProviderRegistry.sol";
import {VM} from "../../fuzz/utils/Bound.sol";
import {ClientActions} from "./ClientActions.sol";
import {CoordinatorActions} from "./CoordinatorActions.sol";
import {ProviderActions} from "./ProviderActions.sol";
import {SettlementActions} from "./SettlementActions.sol";
import {VerifierActions} from "./VerifierActions.sol";

/// @notice Drives random sequences of real calls on a real JobEscrow + ProviderRegistry + TestUSDC.
/// @dev The handler is the verifier Safe: the escrow is deployed with `verifierSafe = address(this)`, and a Safe
/// transaction reaches the escrow as a direct call from the Safe with empty signatures, which is what the handler
/// does. Every other role is a named address that the handler pranks as. Every action (one family per role, in
/// the files imported above; the shared rules in HandlerBase):
///  1. bounds its inputs and picks its job and actors from small fixed sets (at most `maxJobs` jobs),
///  2. predicts from the reference model (EscrowStore.GhostJob) whether the call must succeed,
///  3. makes the real call (`_call`) and compares the outcome with the prediction,
///  4. on success applies the spec's effects to the model and checks the money that moved,
///  5. re-reads the job from the escrow and checks epoch, status transition and model agreement.
/// Time only moves through `warp`; every action first warps to the handler's clock, so time survives between
/// calls whatever the runner does with the block environment.
contract EscrowHandler is ClientActions, ProviderActions, CoordinatorActions, VerifierActions, SettlementActions {
    constructor() {
        uint256 depth = VM.envOr("INVARIANT_DEPTH", uint256(100));
        maxJobs =
            depth / 25 < 4
                ? 4
                : depth / 25 > 20
                    ? 20
                    : depth / 25;
        currentTime = 1_750_000_000;
        VM.warp(currentTime);
        _deployProtocol(address(this), MIN_STAKE);
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
            _depositInitialStake(_providers[i]);
        }
        // Two jobs exist from the start, so that every run has work from its first call: one that every
        // registered provider can take, one whose budget only the cheapest provider fits.
        _createJob(_clients[0], IJobEscrow.JobRequest(TEMPLATE, 6, 3, 1000, 6000, 1 hours));
        _createJob(_clients[1], IJobEscrow.JobRequest(TEMPLATE, 4, 4, 500, 600, 1 days));
    }

    /// @dev Enough for a few minimum locks, and for one or two at the larger prices × intervals: stake runs
    /// short sometimes (the coordinator must skip the provider) until more is deposited.
    function _depositInitialStake(address provider) private {
        uint128 amount = 8_000;
        usdc.mint(provider, amount);
        VM.startPrank(provider);
        usdc.approve(address(registry), amount);
        registry.depositStake(amount);
        VM.stopPrank();
        _ghostStakes[provider].deposited = amount;
        ghost_stakeDeposited += amount;
    }

    // ================================================================== views for the invariants

    /// @notice Every account that can ever be owed or hold test USDC in this campaign.
    function actors() external view returns (address[] memory list) {
        list = new address[](N_ACTORS);
        for (uint256 i = 0; i < N_ACTORS; ++i) {
            list[i] = _actor(i);
        }
    }

    function providers() external view returns (address[N_PROVIDERS] memory) {
        return _providers;
    }

    /// @notice The status the model expects for `jobId` now.
    function modelStatus(uint256 jobId) external view returns (IJobEscrow.JobStatus) {
        return _status(_ghostJobs[jobId]);
    }
}
