// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Vm} from "@prb/test/src/Vm.sol";

/// @dev The cheatcode contract, for handlers and fixtures that are not PRBTest contracts.
Vm constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

/// @dev Wraps `x` into [min, max] (forge-std's `bound`, which the broken npm forge-std cannot provide). Values
/// already in range are kept, so the fuzzer's dictionary values and edge cases (0, 1, max) stay meaningful:
/// 0..3 map to min..min+3 and the top four uint256 values map to max-3..max.
function bound(uint256 x, uint256 min, uint256 max) pure returns (uint256) {
    require(min <= max, "bound: min > max");
    if (x >= min && x <= max) return x;
    uint256 size = max - min;
    if (size == type(uint256).max) return x;
    size += 1;
    if (x <= 3 && size > x) return min + x;
    if (x >= type(uint256).max - 3 && size > type(uint256).max - x) return max - (type(uint256).max - x);
    if (x > max) {
        uint256 above = (x - max) % size;
        return above == 0 ? max : min + above - 1;
    }
    uint256 below = (min - x) % size;
    return below == 0 ? min : max - below + 1;
}
