// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title ISafeOwners
/// @notice The part of a Safe (v1.4.1 OwnerManager) the escrow reads to check owner signatures itself.
interface ISafeOwners {
    function getThreshold() external view returns (uint256);

    function isOwner(address owner) external view returns (bool);
}
