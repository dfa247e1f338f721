// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";

/// @title ProviderRegistry
/// @notice Self-service registry of training providers. No admin: each provider manages only its own record.
contract ProviderRegistry is IProviderRegistry {
    uint256 public constant MAX_NAME_LENGTH = 64;

    mapping(address provider => Provider) private _providers;

    /// @inheritdoc IProviderRegistry
    function register(
        string calldata name,
        uint128 pricePerStep,
        DeviceKind kind,
        string calldata deviceModel,
        uint32 memoryMiB
    ) external {
        // Checks
        if (_providers[msg.sender].registeredAt != 0) revert ProviderRegistryAlreadyRegistered(msg.sender);
        uint256 length = bytes(name).length;
        if (length == 0 || length > MAX_NAME_LENGTH) revert ProviderRegistryInvalidName(length, MAX_NAME_LENGTH);
        _checkOffer(pricePerStep, memoryMiB);
        // Effects
        _providers[msg.sender] = Provider({
            name: name,
            deviceModel: deviceModel,
            pricePerStep: pricePerStep,
            memoryMiB: memoryMiB,
            kind: kind,
            active: true,
            registeredAt: uint64(block.timestamp)
        });
        emit ProviderRegistered(msg.sender, name, pricePerStep, kind, deviceModel, memoryMiB);
    }

    /// @inheritdoc IProviderRegistry
    function update(uint128 pricePerStep, DeviceKind kind, string calldata deviceModel, uint32 memoryMiB) external {
        Provider storage p = _registered(msg.sender);
        _checkOffer(pricePerStep, memoryMiB);
        p.pricePerStep = pricePerStep;
        p.kind = kind;
        p.deviceModel = deviceModel;
        p.memoryMiB = memoryMiB;
        emit ProviderUpdated(msg.sender, pricePerStep, kind, deviceModel, memoryMiB);
    }

    /// @inheritdoc IProviderRegistry
    function deactivate() external {
        _setActive(false);
        emit ProviderDeactivated(msg.sender);
    }

    /// @inheritdoc IProviderRegistry
    function reactivate() external {
        _setActive(true);
        emit ProviderReactivated(msg.sender);
    }

    /// @inheritdoc IProviderRegistry
    function providerOf(address provider) external view returns (Provider memory) {
        return _providers[provider];
    }

    /// @inheritdoc IProviderRegistry
    function isActive(address provider) external view returns (bool) {
        return _providers[provider].active;
    }

    /// @inheritdoc IProviderRegistry
    function quote(address provider) external view returns (uint128 pricePerStep, uint32 memoryMiB, bool active) {
        Provider storage p = _providers[provider];
        return (p.pricePerStep, p.memoryMiB, p.active);
    }

    function _setActive(bool active) private {
        Provider storage p = _registered(msg.sender);
        if (p.active == active) revert ProviderRegistryActiveUnchanged(msg.sender, active);
        p.active = active;
    }

    function _registered(address provider) private view returns (Provider storage p) {
        p = _providers[provider];
        if (p.registeredAt == 0) revert ProviderRegistryNotRegistered(provider);
    }

    function _checkOffer(uint128 pricePerStep, uint32 memoryMiB) private view {
        if (pricePerStep == 0) revert ProviderRegistryZeroPrice(msg.sender);
        if (memoryMiB == 0) revert ProviderRegistryZeroMemory(msg.sender);
    }
}
