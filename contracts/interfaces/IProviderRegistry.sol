// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title IProviderRegistry
/// @notice Providers describe themselves here: a name, a price per logical step and a device profile.
/// It also holds each provider's stake (test USDC): deposited freely, locked per job by the escrow while the
/// provider holds the job or has a checkpoint awaiting decision, released after, slashed on a proven fault, and
/// withdrawn only after an unbonding delay.
/// @dev Warning: the registry holds self-declared data. Nothing here proves that a device exists or is as fast
/// as claimed; the escrow only pays for checkpoints the verifier multisig accepted, so a lie costs the liar time.
/// @dev Warning: the bound escrow may lock, release and slash stake. It is bound once by the deployer and can
/// never change; slashed stake goes to that escrow, which splits it (client, finder, fee recipient).
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

    /// @notice A provider's stake. `deposited` includes `locked` and `unbonding`; free = deposited − locked −
    /// unbonding is what new locks may use.
    struct Stake {
        uint128 deposited; // test USDC held for this provider
        uint128 locked; // summed over the jobs it holds or has a checkpoint pending on
        uint128 unbonding; // asked back; no longer lockable; withdrawable from unbondingReadyAt
        uint64 unbondingReadyAt; // when `unbonding` may be withdrawn (0: nothing unbonding)
    }

    /// @notice Emitted when `provider` registered itself.
    /// @param provider The new provider.
    /// @param name Its name.
    /// @param pricePerStep Its price per accepted step (test USDC, 6 decimals).
    /// @param kind Its device kind.
    /// @param deviceModel Its device model.
    /// @param memoryMiB Its device memory offered.
    event ProviderRegistered(
        address indexed provider,
        string name,
        uint128 pricePerStep,
        DeviceKind kind,
        string deviceModel,
        uint32 memoryMiB
    );
    /// @notice Emitted when `provider` changed its price or device profile.
    /// @param provider The provider.
    /// @param pricePerStep Its new price.
    /// @param kind Its device kind.
    /// @param deviceModel Its device model.
    /// @param memoryMiB Its device memory offered.
    event ProviderUpdated(
        address indexed provider,
        uint128 pricePerStep,
        DeviceKind kind,
        string deviceModel,
        uint32 memoryMiB
    );
    /// @notice Emitted when `provider` stopped taking new work.
    /// @param provider The provider.
    event ProviderDeactivated(address indexed provider);
    /// @notice Emitted when `provider` started taking new work again.
    /// @param provider The provider.
    event ProviderReactivated(address indexed provider);

    /// @notice Emitted once, when the deployer bound the escrow allowed to lock, release and slash stake.
    /// @param escrow The escrow.
    event EscrowBound(address indexed escrow);
    /// @notice Emitted when `provider` deposited stake.
    /// @param provider The provider.
    /// @param amount Test USDC deposited now.
    /// @param deposited Its whole deposit afterwards.
    event StakeDeposited(address indexed provider, uint128 amount, uint128 deposited);
    /// @notice Emitted when `provider` asked stake back; it is withdrawable from `readyAt`.
    /// @param provider The provider.
    /// @param amount Test USDC added to the unbonding amount.
    /// @param unbonding The whole unbonding amount afterwards.
    /// @param readyAt When it may be withdrawn (the delay restarts with each request).
    event UnbondingStarted(address indexed provider, uint128 amount, uint128 unbonding, uint64 readyAt);
    /// @notice Emitted when `provider` withdrew its unbonded stake.
    /// @param provider The provider.
    /// @param amount Test USDC transferred back.
    event StakeWithdrawn(address indexed provider, uint128 amount);
    /// @notice Emitted when the escrow locked `provider`'s stake for a job (its lock on the job is now `amount`).
    /// @param provider The provider.
    /// @param jobId The job.
    /// @param amount The job's lock.
    event StakeLocked(address indexed provider, uint256 indexed jobId, uint128 amount);
    /// @notice Emitted when the escrow released `provider`'s lock on a job.
    /// @param provider The provider.
    /// @param jobId The job.
    /// @param amount The lock released.
    event StakeReleased(address indexed provider, uint256 indexed jobId, uint128 amount);
    /// @notice Emitted when the escrow slashed `provider`'s lock on a job; the amount went to the escrow.
    /// @param provider The provider.
    /// @param jobId The job.
    /// @param amount Test USDC slashed.
    event StakeSlashed(address indexed provider, uint256 indexed jobId, uint128 amount);
    /// @notice Emitted when the escrow took a probationary provider's lock on a job for a hold that ended without
    /// an accepted checkpoint (sent to the escrow, which credits the job's client).
    /// @param provider The provider.
    /// @param jobId The job.
    /// @param amount Test USDC taken from its stake.
    event StakeForfeited(address indexed provider, uint256 indexed jobId, uint128 amount);

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

    /// @notice The constructor needs a token, a minimum stake and an unbonding delay, none of them zero.
    /// @param stakeToken The token given.
    /// @param minStake The minimum given.
    /// @param unbondingDelay The delay given.
    error ProviderRegistryInvalidConfig(address stakeToken, uint128 minStake, uint64 unbondingDelay);
    /// @notice Only the deployer may bind the escrow, once.
    /// @param caller Who called.
    /// @param escrow The escrow already bound (0 when none).
    error ProviderRegistryCannotBind(address caller, address escrow);
    /// @notice Only the bound escrow may lock, release or slash stake.
    /// @param caller Who called.
    /// @param escrow The bound escrow.
    error ProviderRegistryNotEscrow(address caller, address escrow);
    /// @notice A stake amount of zero was given.
    /// @param provider The caller.
    error ProviderRegistryZeroStake(address provider);
    /// @notice Not enough free stake.
    /// @param provider The provider.
    /// @param free Its free stake.
    /// @param needed What the call needs.
    error ProviderRegistryStakeShort(address provider, uint256 free, uint256 needed);
    /// @notice Nothing is unbonding.
    /// @param provider The caller.
    error ProviderRegistryNothingUnbonding(address provider);
    /// @notice The unbonding delay has not passed.
    /// @param provider The caller.
    /// @param readyAt When it may be withdrawn.
    /// @param now_ The block's timestamp.
    error ProviderRegistryUnbondingNotReady(address provider, uint64 readyAt, uint256 now_);

    /// @notice The stake token (test USDC; the escrow's token).
    function stakeToken() external view returns (IERC20);
    /// @notice The smallest lock a job takes (the network minimum), test USDC.
    function minStake() external view returns (uint128);
    /// @notice Seconds between asking stake back and withdrawing it; longer than any window in which a fault can
    /// still be proven (the escrow checks this against its DECISION_TIMEOUT).
    function unbondingDelay() external view returns (uint64);
    /// @notice The deployer: the one address that may bind the escrow.
    function binder() external view returns (address);
    /// @notice The escrow bound to this registry (0 before `bindEscrow`).
    function escrow() external view returns (address);
    /// @notice Σ of every provider's deposit (proof of reserves: the registry's token balance covers it).
    function totalStaked() external view returns (uint256);

    /// @notice Binds the escrow that may lock, release and slash stake. Once, by the deployer.
    /// @param escrow_ The escrow.
    function bindEscrow(address escrow_) external;

    /// @notice Deposits stake for the (registered) caller; needs an allowance on the stake token.
    /// @param amount Test USDC to deposit (not zero).
    function depositStake(uint128 amount) external;

    /// @notice Asks `amount` of free stake back. It stops being lockable now and is withdrawable after
    /// `unbondingDelay`; each request restarts the delay for the whole unbonding amount.
    /// @param amount Test USDC (not zero, at most the free stake).
    function requestUnbond(uint128 amount) external;

    /// @notice Withdraws the whole unbonding amount once its delay passed (at `unbondingReadyAt`, inclusive).
    function withdrawStake() external;

    /// @notice The escrow locks `provider`'s stake for a job: its lock becomes max(existing, minStake, amount).
    /// @param provider The provider.
    /// @param jobId The job.
    /// @param amount The lock the job asks for (price × checkpoint interval).
    function lockStake(address provider, uint256 jobId, uint128 amount) external;

    /// @notice The escrow releases `provider`'s lock on a job. Nothing happens when there is none.
    /// @param provider The provider.
    /// @param jobId The job.
    function releaseStake(address provider, uint256 jobId) external;

    /// @notice The escrow slashes `provider`'s lock on a job: it leaves the deposit and goes to the escrow.
    /// @param provider The provider.
    /// @param jobId The job.
    /// @return amount Test USDC slashed (0 when there was no lock).
    function slashStake(address provider, uint256 jobId) external returns (uint128 amount);

    /// @notice Escrow only: like `slashStake`, for a probationary hold that ended without an accepted checkpoint
    /// (no fault is claimed: the lock pays the client for the delay). Returns the amount sent to the escrow.
    /// @param provider The provider.
    /// @param jobId The job.
    function forfeitStake(address provider, uint256 jobId) external returns (uint128 amount);

    /// @notice `provider`'s stake.
    /// @param provider The provider.
    function stakeOf(address provider) external view returns (Stake memory);
    /// @notice `provider`'s lock on a job.
    /// @param provider The provider.
    /// @param jobId The job.
    function lockOf(address provider, uint256 jobId) external view returns (uint128);
    /// @notice What a lock of `amount` on the job would need from `provider`, and what it has for it.
    /// @param provider The provider.
    /// @param jobId The job.
    /// @param amount The lock the job asks for.
    /// @return needed max(minStake, amount) less the lock it already has on the job (0 if that covers it).
    /// @return free Its free stake.
    function stakeQuote(
        address provider,
        uint256 jobId,
        uint128 amount
    ) external view returns (uint128 needed, uint128 free);
    /// @notice Proof of reserves of the stakes: the registry's token balance and Σ deposits.
    /// @return held Test USDC held.
    /// @return owes Σ deposits.
    function reserves() external view returns (uint256 held, uint256 owes);

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
