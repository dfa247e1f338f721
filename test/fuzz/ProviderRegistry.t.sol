// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {PRBTest} from "@prb/test/src/PRBTest.sol";
import {IProviderRegistry} from "../../contracts/interfaces/IProviderRegistry.sol";
import {ProviderRegistry} from "../../contracts/ProviderRegistry.sol";
import {TestUSDC} from "../../contracts/test/TestUSDC.sol";
import {bound} from "./utils/Bound.sol";

/// @notice ProviderRegistry input bounds: a name of 1..64 bytes, a non-zero price and memory; each provider
/// manages only its own record.
contract ProviderRegistryFuzzTest is PRBTest {
    uint256 private constant MAX_NAME = 64;

    ProviderRegistry private registry;

    function setUp() public {
        vm.warp(1_750_000_000);
        registry = new ProviderRegistry(new TestUSDC(), 1e6, 2 days);
    }

    function _name(uint256 length, bytes1 fill) private pure returns (string memory) {
        bytes memory name = new bytes(length);
        for (uint256 i = 0; i < length; ++i) {
            name[i] = fill;
        }
        return string(name);
    }

    function testFuzz_register_storesNamesOf1To64Bytes(
        address provider,
        uint256 length,
        uint128 price,
        uint32 memoryMiB,
        bool gpu,
        string calldata deviceModel
    ) public {
        length = bound(length, 1, MAX_NAME);
        price = uint128(bound(price, 1, type(uint128).max));
        memoryMiB = uint32(bound(memoryMiB, 1, type(uint32).max));
        IProviderRegistry.DeviceKind kind = gpu ? IProviderRegistry.DeviceKind.GPU : IProviderRegistry.DeviceKind.CPU;
        string memory name = _name(length, "n");

        vm.prank(provider);
        registry.register(name, price, kind, deviceModel, memoryMiB);

        IProviderRegistry.Provider memory p = registry.providerOf(provider);
        assertEq(p.name, name, "name");
        assertEq(p.deviceModel, deviceModel, "deviceModel");
        assertEq(p.pricePerStep, price, "price");
        assertEq(p.memoryMiB, memoryMiB, "memory");
        assertEq(uint8(p.kind), uint8(kind), "kind");
        assertTrue(p.active, "active at once");
        assertEq(p.registeredAt, block.timestamp, "registeredAt");
        (uint128 quoted, uint32 quotedMemory, bool active) = registry.quote(provider);
        assertEq(quoted, price, "quote price");
        assertEq(quotedMemory, memoryMiB, "quote memory");
        assertTrue(active, "quote active");
    }

    function testFuzz_register_revertsIf_nameEmptyOrLongerThan64Bytes(uint256 length) public {
        length = length % 2 == 0 ? 0 : bound(length, MAX_NAME + 1, 4096);
        vm.expectRevert(
            abi.encodeWithSelector(IProviderRegistry.ProviderRegistryInvalidName.selector, length, MAX_NAME)
        );
        registry.register(_name(length, "n"), 1, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
    }

    /// @dev The bound counts bytes, not characters: 16 four-byte characters fit, 17 do not.
    function test_register_countsBytesNotCharacters() public {
        bytes memory emoji = hex"f09f9a80"; // U+1F680, four bytes in UTF-8
        bytes memory name;
        for (uint256 i = 0; i < 16; ++i) {
            name = bytes.concat(name, emoji);
        }
        registry.register(string(name), 1, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
        name = bytes.concat(name, emoji);
        vm.expectRevert(abi.encodeWithSelector(IProviderRegistry.ProviderRegistryInvalidName.selector, 68, MAX_NAME));
        vm.prank(address(0xB0B));
        registry.register(string(name), 1, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
    }

    function testFuzz_register_revertsIf_priceOrMemoryZero(address provider, uint128 price, uint32 memoryMiB) public {
        if (price == 0) {
            vm.expectRevert(abi.encodeWithSelector(IProviderRegistry.ProviderRegistryZeroPrice.selector, provider));
        } else if (memoryMiB == 0) {
            vm.expectRevert(abi.encodeWithSelector(IProviderRegistry.ProviderRegistryZeroMemory.selector, provider));
        } else {
            price = 0;
            vm.expectRevert(abi.encodeWithSelector(IProviderRegistry.ProviderRegistryZeroPrice.selector, provider));
        }
        vm.prank(provider);
        registry.register("p", price, IProviderRegistry.DeviceKind.CPU, "cpu", memoryMiB);
    }

    function testFuzz_register_revertsIf_alreadyRegistered(address provider, uint256 length) public {
        vm.prank(provider);
        registry.register("first", 1, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
        vm.expectRevert(abi.encodeWithSelector(IProviderRegistry.ProviderRegistryAlreadyRegistered.selector, provider));
        vm.prank(provider);
        registry.register(_name(bound(length, 1, MAX_NAME), "s"), 2, IProviderRegistry.DeviceKind.GPU, "gpu", 2);
    }

    /// @dev update, deactivate and reactivate touch only the caller's own record, and only once registered.
    function testFuzz_update_changesOnlyTheCallersRecord(address provider, address other, uint128 price) public {
        vm.assume(provider != other);
        price = uint128(bound(price, 1, type(uint128).max));
        vm.prank(provider);
        registry.register("mine", 7, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
        vm.prank(other);
        registry.register("theirs", 9, IProviderRegistry.DeviceKind.CPU, "cpu", 1);

        vm.prank(provider);
        registry.update(price, IProviderRegistry.DeviceKind.GPU, "gpu", 80_000);
        vm.prank(provider);
        registry.deactivate();

        assertEq(registry.providerOf(provider).pricePerStep, price, "updated");
        assertFalse(registry.isActive(provider), "deactivated");
        assertEq(registry.providerOf(other).pricePerStep, 9, "other price untouched");
        assertTrue(registry.isActive(other), "other still active");
        assertEq(registry.providerOf(provider).name, "mine", "name never changes");
    }

    function testFuzz_updateOrToggle_revertsIf_notRegistered(address provider, uint8 action) public {
        vm.expectRevert(abi.encodeWithSelector(IProviderRegistry.ProviderRegistryNotRegistered.selector, provider));
        vm.prank(provider);
        if (action % 3 == 0) registry.update(1, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
        else if (action % 3 == 1) registry.deactivate();
        else registry.reactivate();
    }

    function testFuzz_toggle_revertsIf_stateUnchanged(address provider, bool deactivateFirst) public {
        vm.prank(provider);
        registry.register("p", 1, IProviderRegistry.DeviceKind.CPU, "cpu", 1);
        if (deactivateFirst) {
            vm.prank(provider);
            registry.deactivate();
        }
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderRegistry.ProviderRegistryActiveUnchanged.selector,
                provider,
                !deactivateFirst
            )
        );
        vm.prank(provider);
        if (deactivateFirst) registry.deactivate();
        else registry.reactivate();
    }
}
