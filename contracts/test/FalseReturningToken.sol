// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title FalseReturningToken
/// @notice A broken ERC-20 whose transfers return false instead of reverting, to prove that the escrow's
/// SafeERC20 use rejects it. Test only.
contract FalseReturningToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        return true;
    }

    function transfer(address, uint256) external pure returns (bool) {
        return false;
    }

    function transferFrom(address, address, uint256) external pure returns (bool) {
        return false;
    }
}
