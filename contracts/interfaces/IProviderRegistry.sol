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
    /// @param provider The new provider.
    /// @param name Its name.
    /// @param pricePerStep Its price per accepted step (test USDC, 6 decimals).
    /// @param kind Its device kind.
    /// @param deviceModel Its device model.
    /// @param memoryMiB Its device memory offered.
    event ProviderRegistered(
        address indexed provider, string name, uint128 pricePerStep, DeviceKind kind, string deviceModel, uint32 memoryMiB
    );
    /// @notice Emitted when `provider` changed its price or device profile.
    /// @param provider The provider.
    /// @param pricePerStep Its new price.
    /// @param kind Its device kind.
    /// @param deviceModel Its device model.
    /// @param memoryMiB Its device memory offered.
    event ProviderUpdated(
        address indexed provider, uint128 pricePerStep, DeviceKind kind, string deviceModel, uint32 memoryMiB
    );
    /// @notice Emitted when `provider` stopped taking new work.
    /// @param provider The provider.
    event ProviderDeactivated(address indexed provider);
    /// @notice Emitted when `provider` started taking new work again.
    /// @param provider The provider.
    event ProviderReactivated(address indexed provider);

    /// @notice `provider` is already registered.
    /// @param provider The caller.
    error ProviderRegistryAlreadyRegistered(address provider);
    /// @notice `provider` is not registered.
    /// @param provider The caller.
    error ProviderRegistryNotRegistered(address provider);
    /// @notice The name is empty or longer than `maxLength` bytes.
    /// @param length The name's length in bytes.
    /// @param maxLength MAX_NAME_LENGTH.
    error ProviderRegistryInvalidName(uint256 length, uint256 maxLength);
    /// @notice A price per step of zero was given.
    /// @param provider The caller.
    error ProviderRegistryZeroPrice(address provider);
    /// @notice A device memory of zero was given.
    /// @param provider The caller.
    error ProviderRegistryZeroMemory(address provider);
    /// @notice The provider is already in the requested active state.
    /// @param provider The caller.
    /// @param active The state it is already in.
    error ProviderRegistryActiveUnchanged(address provider, bool active);

    /// @notice The longest provider name, in bytes (64).
    function MAX_NAME_LENGTH() external view returns (uint256);

    /// @notice Registers the caller as a provider; it is active at once.
    /// @param name Shown to clients; 1..64 bytes.
    /// @param pricePerStep Test USDC asked per accepted logical step (not zero).
    /// @param kind Device kind.
    /// @param deviceModel Device model, free text.
    /// @param memoryMiB Device memory offered (not zero).
    function register(
        string calldata name,
        uint128 pricePerStep,
        DeviceKind kind,
        string calldata deviceModel,
        uint32 memoryMiB
    ) external;

    /// @notice Changes the caller's price and device profile. Running assignments keep the price they were given.
    /// @param pricePerStep New price (not zero).
    /// @param kind Device kind.
    /// @param deviceModel Device model.
    /// @param memoryMiB Device memory offered (not zero).
    function update(uint128 pricePerStep, DeviceKind kind, string calldata deviceModel, uint32 memoryMiB) external;

    /// @notice The caller stops taking new work. Work already assigned is unaffected.
    function deactivate() external;

    /// @notice The caller takes new work again.
    function reactivate() external;

    /// @notice The record of `provider` (registeredAt == 0 when unknown).
    /// @param provider The provider.
    function providerOf(address provider) external view returns (Provider memory);

    /// @notice Whether `provider` is registered and active.
    /// @param provider The provider.
    function isActive(address provider) external view returns (bool);

    /// @notice The price per step `provider` asks, its memory, and whether it may be assigned new work.
    /// @param provider The provider.
    /// @return pricePerStep Its price.
    /// @return memoryMiB Its device memory.
    /// @return active Whether it is registered and active.
    function quote(address provider) external view returns (uint128 pricePerStep, uint32 memoryMiB, bool active);
}
