// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @title TestUSDC
/// @notice Test USDC for local chains only: 6 decimals, EIP-2612 permit, and a faucet anyone may call.
/// @dev Warning: worthless by design. Never deploy it where a real USDC exists; Base Sepolia uses its own test USDC.
contract TestUSDC is ERC20, ERC20Permit {
    constructor() ERC20("GPUChain Test USDC", "tUSDC") ERC20Permit("GPUChain Test USDC") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Mints `amount` to `to`. Open to anyone: it is a test token.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
