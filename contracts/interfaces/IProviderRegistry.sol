// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IProviderRegistry
/// @notice Providers describe themselves here: a name, a price per logical step and a device profile.
/// @dev Warning: the registry holds self-declared data. Nothing here proves that a device exists or is as fast
/// as claimed; the escrow only pays for checkpoints the verifier multisig accepted, so a lie costs the liar time.
interface IProviderRegistry {
    /// @notice The kind of device a provider trains on.
    enum DeviceKind {
        CPU,
        GPU
    }

    /// @notice A provider's public record.
    struct Provider {
        string name; // shown to clients and in events; 1..64 bytes
        string deviceModel; // e.g. "NVIDIA H200" or "x86_64 CPU"
        uint128 pricePerStep; // test USDC (6 decimals) asked per accepted logical step
        uint32 memoryMiB; // device memory the provider offers (a capped profile reports its cap)
        DeviceKind kind;
        bool active; // inactive providers are never assigned new work
        uint64 registeredAt; // 0 means "not registered"
    }

    /// @notice Emitted when `provider` registered itself.
    event ProviderRegistered(
        address indexed provider, string name, uint128 pricePerStep, DeviceKind kind, string deviceModel, uint32 memoryMiB
    );
    /// @notice Emitted when `provider` changed its price or device profile.
    event ProviderUpdated(
        address indexed provider, uint128 pricePerStep, DeviceKind kind, string deviceModel, uint32 memoryMiB
    );
    /// @notice Emitted when `provider` stopped taking new work.
    event ProviderDeactivated(address indexed provider);
    /// @notice Emitted when `provider` started taking new work again.
    event ProviderReactivated(address indexed provider);

    /// @notice `provider` is already registered.
    error ProviderRegistryAlreadyRegistered(address provider);
    /// @notice `provider` is not registered.
    error ProviderRegistryNotRegistered(address provider);
    /// @notice The name is empty or longer than `maxLength` bytes.
    error ProviderRegistryInvalidName(uint256 length, uint256 maxLength);
    /// @notice A price per step of zero was given.
    error ProviderRegistryZeroPrice(address provider);
    /// @notice A device memory of zero was given.
    error ProviderRegistryZeroMemory(address provider);
    /// @notice The provider is already in the requested active state.
    error ProviderRegistryActiveUnchanged(address provider, bool active);

    /// @notice Registers the caller as a provider; it is active at once.
    function register(
        string calldata name,
        uint128 pricePerStep,
        DeviceKind kind,
        string calldata deviceModel,
        uint32 memoryMiB
    ) external;

    /// @notice Changes the caller's price and device profile. Running assignments keep the price they were given.
    function update(uint128 pricePerStep, DeviceKind kind, string calldata deviceModel, uint32 memoryMiB) external;

    /// @notice The caller stops taking new work. Work already assigned is unaffected.
    function deactivate() external;

    /// @notice The caller takes new work again.
    function reactivate() external;

    /// @notice The record of `provider` (registeredAt == 0 when unknown).
    function providerOf(address provider) external view returns (Provider memory);

    /// @notice Whether `provider` is registered and active.
    function isActive(address provider) external view returns (bool);

    /// @notice The price per step `provider` asks, and whether it may be assigned new work.
    function quote(address provider) external view returns (uint128 pricePerStep, uint32 memoryMiB, bool active);
}
