// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IJobEscrow} from "../../../contracts/interfaces/IJobEscrow.sol";
import {JobEscrow} from "../../../contracts/JobEscrow.sol";
import {ProviderRegistry} from "../../../contracts/ProviderRegistry.sol";
import {TestUSDC} from "../../../contracts/test/TestUSDC.sol";
import {VM} from "./Bound.sol";

/// @notice What the fuzz fixture (EscrowFixture) and the invariant handler (HandlerBase) deploy alike: a real
/// TestUSDC, ProviderRegistry and JobEscrow with the same named roles, lease, bond and approved template.
abstract contract ProtocolSetup {
    uint64 public constant LEASE = 1 hours;
    uint128 public constant BOND = 50e6;
    uint64 public constant ARBITER_TIMEOUT = 3 days;
    uint64 public constant UNBONDING = 2 days;
    bytes32 public constant TEMPLATE = keccak256("mnist-mlp-v1");
    address public constant OWNER = address(0x0A110000);
    address public constant COORDINATOR = address(0xC00D0000);
    address public constant ARBITER = address(0xA4B10000);
    address public constant FEE_RECIPIENT = address(0xFEE00000);
    address public constant STRANGER = address(0x57A40000);

    TestUSDC public usdc;
    ProviderRegistry public registry;
    JobEscrow public escrow;

    /// @dev Deploys and binds the three contracts; the owner approves TEMPLATE.
    function _deployProtocol(address verifierSafe, uint128 minStake) internal {
        usdc = new TestUSDC();
        registry = new ProviderRegistry(usdc, minStake, UNBONDING);
        escrow = new JobEscrow(
            usdc,
            registry,
            IJobEscrow.Roles({
                owner: OWNER,
                coordinator: COORDINATOR,
                arbiter: ARBITER,
                feeRecipient: FEE_RECIPIENT,
                verifierSafe: verifierSafe
            }),
            LEASE,
            BOND
        );
        registry.bindEscrow(address(escrow));
        VM.prank(OWNER);
        escrow.setTemplateApproval(TEMPLATE, true);
    }
}
