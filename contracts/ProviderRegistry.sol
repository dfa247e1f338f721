// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IProviderRegistry} from "./interfaces/IProviderRegistry.sol";

/// @title ProviderRegistry
/// @notice Self-service registry of training providers and their stake. No admin: each provider manages only its
/// own record and deposit; only the escrow bound once at deployment locks, releases and slashes stake.
/// @dev Every function touches one provider (and one job's lock): no loops.
contract ProviderRegistry is IProviderRegistry {
    using SafeERC20 for IERC20;

    uint256 public constant MAX_NAME_LENGTH = 64;

    IERC20 public immutable stakeToken;
    uint128 public immutable minStake;
    uint64 public immutable unbondingDelay;
    address public immutable binder;
    address public escrow;
    uint256 public totalStaked;

    mapping(address provider => Provider) private _providers;
    mapping(address provider => Stake) private _stakes;
    mapping(address provider => mapping(uint256 jobId => uint128)) private _locks;

    constructor(IERC20 stakeToken_, uint128 minStake_, uint64 unbondingDelay_) {
        if (address(stakeToken_) == address(0) || minStake_ == 0 || unbondingDelay_ == 0) {
            revert ProviderRegistryInvalidConfig(address(stakeToken_), minStake_, unbondingDelay_);
        }
        stakeToken = stakeToken_;
        minStake = minStake_;
        unbondingDelay = unbondingDelay_;
        binder = msg.sender;
    }

    modifier onlyEscrow() {
        if (msg.sender != escrow || escrow == address(0)) revert ProviderRegistryNotEscrow(msg.sender, escrow);
        _;
    }

    /// @inheritdoc IProviderRegistry
    function bindEscrow(address escrow_) external {
        if (msg.sender != binder || escrow != address(0) || escrow_ == address(0)) {
            revert ProviderRegistryCannotBind(msg.sender, escrow);
        }
        escrow = escrow_;
        emit EscrowBound(escrow_);
    }

    // ------------------------------------------------------------------ stake: providers

    /// @inheritdoc IProviderRegistry
    function depositStake(uint128 amount) external {
        // Checks
        Stake storage st = _stakes[msg.sender];
        _registered(msg.sender);
        if (amount == 0) revert ProviderRegistryZeroStake(msg.sender);
        // Effects
        st.deposited += amount;
        totalStaked += amount;
        emit StakeDeposited(msg.sender, amount, st.deposited);
        // Interactions
        stakeToken.safeTransferFrom(msg.sender, address(this), amount);
    }

    /// @inheritdoc IProviderRegistry
    function requestUnbond(uint128 amount) external {
        Stake storage st = _stakes[msg.sender];
        if (amount == 0) revert ProviderRegistryZeroStake(msg.sender);
        uint128 free = _free(st);
        if (amount > free) revert ProviderRegistryStakeShort(msg.sender, free, amount);
        uint64 readyAt = uint64(block.timestamp) + unbondingDelay;
        st.unbonding += amount;
        st.unbondingReadyAt = readyAt;
        emit UnbondingStarted(msg.sender, amount, st.unbonding, readyAt);
    }

    /// @inheritdoc IProviderRegistry
    function withdrawStake() external {
        // Checks
        Stake storage st = _stakes[msg.sender];
        uint128 amount = st.unbonding;
        if (amount == 0) revert ProviderRegistryNothingUnbonding(msg.sender);
        if (block.timestamp < st.unbondingReadyAt) {
            revert ProviderRegistryUnbondingNotReady(msg.sender, st.unbondingReadyAt, block.timestamp);
        }
        // Effects
        st.unbonding = 0;
        st.unbondingReadyAt = 0;
        st.deposited -= amount;
        totalStaked -= amount;
        emit StakeWithdrawn(msg.sender, amount);
        // Interactions
        stakeToken.safeTransfer(msg.sender, amount);
    }

    // ------------------------------------------------------------------ stake: escrow

    /// @inheritdoc IProviderRegistry
    function lockStake(address provider, uint256 jobId, uint128 amount) external onlyEscrow {
        Stake storage st = _stakes[provider];
        uint128 current = _locks[provider][jobId];
        uint128 extra = _extraNeeded(current, amount);
        if (extra == 0) return;
        uint128 free = _free(st);
        if (extra > free) revert ProviderRegistryStakeShort(provider, free, extra);
        st.locked += extra;
        _locks[provider][jobId] = current + extra;
        emit StakeLocked(provider, jobId, current + extra);
    }

    /// @inheritdoc IProviderRegistry
    function releaseStake(address provider, uint256 jobId) external onlyEscrow {
        uint128 amount = _locks[provider][jobId];
        if (amount == 0) return;
        _locks[provider][jobId] = 0;
        _stakes[provider].locked -= amount;
        emit StakeReleased(provider, jobId, amount);
    }

    /// @inheritdoc IProviderRegistry
    function slashStake(address provider, uint256 jobId) external onlyEscrow returns (uint128 amount) {
        amount = _take(provider, jobId);
        if (amount == 0) return 0;
        emit StakeSlashed(provider, jobId, amount);
        // Interactions: to the escrow, which books the split before calling here.
        stakeToken.safeTransfer(msg.sender, amount);
    }

    /// @inheritdoc IProviderRegistry
    function forfeitStake(address provider, uint256 jobId) external onlyEscrow returns (uint128 amount) {
        amount = _take(provider, jobId);
        if (amount == 0) return 0;
        emit StakeForfeited(provider, jobId, amount);
        // Interactions: to the escrow, which credits the client before calling here.
        stakeToken.safeTransfer(msg.sender, amount);
    }

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

    /// @inheritdoc IProviderRegistry
    function stakeOf(address provider) external view returns (Stake memory) {
        return _stakes[provider];
    }

    /// @inheritdoc IProviderRegistry
    function lockOf(address provider, uint256 jobId) external view returns (uint128) {
        return _locks[provider][jobId];
    }

    /// @inheritdoc IProviderRegistry
    function stakeQuote(
        address provider,
        uint256 jobId,
        uint128 amount
    ) external view returns (uint128 needed, uint128 free) {
        return (_extraNeeded(_locks[provider][jobId], amount), _free(_stakes[provider]));
    }

    /// @inheritdoc IProviderRegistry
    function reserves() external view returns (uint256 held, uint256 owes) {
        return (stakeToken.balanceOf(address(this)), totalStaked);
    }

    /// @dev Removes `provider`'s whole lock on the job from its stake (the effects of a slash or a forfeit).
    function _take(address provider, uint256 jobId) private returns (uint128 amount) {
        amount = _locks[provider][jobId];
        if (amount == 0) return 0;
        Stake storage st = _stakes[provider];
        _locks[provider][jobId] = 0;
        st.locked -= amount;
        st.deposited -= amount;
        totalStaked -= amount;
    }

    function _free(Stake storage st) private view returns (uint128) {
        return st.deposited - st.locked - st.unbonding;
    }

    /// @dev A job's lock is at least the network minimum; a provider re-assigned a job it still has a lock on
    /// only tops it up.
    function _extraNeeded(uint128 current, uint128 amount) private view returns (uint128) {
        uint128 target = amount < minStake ? minStake : amount;
        return target > current ? target - current : 0;
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
