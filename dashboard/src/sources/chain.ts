/**
 * The chain, read by the browser itself over JSON-RPC (ethers): the head block every 2 s, and the reads the
 * pages ask for. A failed read (429, connection refused, timeout) marks the chain unreachable and retries with
 * backoff; the last good values stay with their block.
 */
import { Contract, FetchRequest, JsonRpcProvider, Network } from "ethers";
// Only `abi` is taken from the build artifact (Vite's JSON named exports): bytecode stays out of the bundle.
import { abi as escrowAbi } from "../../../artifacts/contracts/JobEscrow.sol/JobEscrow.json";
import { abi as registryAbi } from "../../../artifacts/contracts/ProviderRegistry.sol/ProviderRegistry.json";
import { chainUrl, type DashboardConfig } from "./config.ts";
import { nextDelay } from "./backoff.ts";
import { deploymentStartBlock } from "../../../sdk/node/deploymentBlock.ts";
import { SAFE_ABI } from "../../../sdk/node/safeOwners.ts";

export interface ChainHealth {
  reachable: boolean | null; // null: not read yet
  head: number | null;
  headAt: number | null; // when the head was last read (ms)
  error?: string;
  /** What was asked, of which URL, when it failed: the banner names it. */
  tried?: string;
  retryAt?: number;
}

export class ChainReader {
  readonly provider: JsonRpcProvider;
  readonly escrow: Contract;
  readonly registry: Contract;
  readonly safe: Contract;
  health: ChainHealth = { reachable: null, head: null, headAt: null };
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private listeners = new Set<() => void>();
  private stopped = false;
  private start: Promise<number> | undefined;
  private readonly firstBlock: number | undefined;
  private readonly where: string;

  constructor(config: DashboardConfig) {
    this.firstBlock = config.deployment.firstBlock;
    this.where = config.rpcRedacted ? `${config.rpc} through this dashboard's relay (api/rpc)` : config.rpc;
    const req = new FetchRequest(chainUrl(config, location.href));
    req.timeout = 5000;
    // One attempt per read: the page shows "Chain unreachable" and retries itself, with a visible countdown.
    req.setThrottleParams({ maxAttempts: 1 });
    const network = Network.from(Number(config.chainId));
    this.provider = new JsonRpcProvider(req, network, { staticNetwork: network, batchMaxCount: 1, polling: false });
    this.escrow = new Contract(config.deployment.escrow, escrowAbi as never, this.provider);
    this.registry = new Contract(config.deployment.registry, registryAbi as never, this.provider);
    this.safe = new Contract(config.deployment.verifierSafe, SAFE_ABI, this.provider);
    void this.tick();
  }

  subscribe(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  /** Runs one read, keeping health up to date. Throws on failure (callers keep their last good value). */
  async read<T>(f: () => Promise<T>): Promise<T> {
    try {
      const v = await f();
      this.ok();
      return v;
    } catch (err) {
      this.fail(err);
      throw err;
    }
  }

  /**
   * The first block worth reading the deployment's events from (sdk/node/deploymentBlock.ts), found once: a public chain
   * read from block 0 would cost thousands of log queries per wallet check. A failed search is tried again next time.
   */
  deploymentStart(head: number): Promise<number> {
    this.start ??= this.read(() =>
      deploymentStartBlock(this.provider, String(this.escrow.target), head, this.firstBlock),
    ).catch((err) => {
      this.start = undefined;
      throw err;
    });
    return this.start;
  }

  readAgain(): void {
    clearTimeout(this.timer);
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.provider.destroy();
  }

  private async tick() {
    if (this.stopped) return;
    try {
      const head = await this.read(() => this.provider.getBlockNumber());
      this.health = { reachable: true, head, headAt: Date.now() };
      this.emit();
    } catch {
      /* fail() already recorded it */
    }
    const wait = this.failures ? nextDelay(this.failures, 2000, 30_000) : 2000;
    if (this.failures) this.health = { ...this.health, retryAt: Date.now() + wait };
    this.emit();
    this.timer = setTimeout(() => void this.tick(), wait);
  }

  private ok() {
    if (this.failures || this.health.reachable !== true) {
      this.failures = 0;
      this.health = { ...this.health, reachable: true, error: undefined, tried: undefined, retryAt: undefined };
      this.emit();
    }
  }

  private fail(err: unknown) {
    this.failures += 1;
    const text = String((err as Error)?.message ?? err);
    const why = /429|Too Many/i.test(text) ? "the RPC is limiting requests (HTTP 429)" : "the RPC did not answer";
    const tried = `JSON-RPC from this browser to ${this.where}`;
    this.health = { ...this.health, reachable: false, error: why, tried };
    this.emit();
  }

  private emit() {
    for (const f of this.listeners) f();
  }
}
