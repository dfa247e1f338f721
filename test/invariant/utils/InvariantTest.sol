// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {PRBTest} from "@prb/test/src/PRBTest.sol";

/// @notice The part of forge-std's StdInvariant that the invariant runner reads: which contracts, and which of
/// their functions, the fuzzer may call. Hardhat's EDR runner calls `targetContracts()` and `targetSelectors()` on
/// the test contract after `setUp()`, exactly as forge does.
abstract contract InvariantTest is PRBTest {
    struct FuzzSelector {
        address addr;
        bytes4[] selectors;
    }

    address[] private _targetedContracts;
    FuzzSelector[] private _targetedSelectors;

    function targetContract(address target) internal {
        _targetedContracts.push(target);
    }

    function targetSelector(FuzzSelector memory selector) internal {
        _targetedSelectors.push(selector);
    }

    function targetContracts() public view returns (address[] memory) {
        return _targetedContracts;
    }

    function targetSelectors() public view returns (FuzzSelector[] memory) {
        return _targetedSelectors;
    }
}
