/**
 * ethers' JsonRpcProvider with the shared RPC policy (sdk/node/rpc.ts) under every request: a per-endpoint rate limit,
 * retries with backoff and full jitter on transport faults (HTTP 429 honouring Retry-After, 5xx, timeouts, resets,
 * refused connections, bodies that are not JSON), a bound on the whole call after which the last error is thrown,
 * and failover between several URLs (`"http://a,http://b"`). A JSON-RPC error answer (a revert) is not retried.
 * A raw transaction answered "already known" / "nonce too low" is looked up by its hash: if the node has it, the
 * send succeeded (an earlier attempt whose answer was lost got it there), so sending twice is harmless. A node-signed
 * `eth_sendTransaction` (development nodes) is retried only after a 429 or a refused connection: after a dropped
 * answer the node may already have sent it, and a second request would be a second transaction.
 *
 * Each answer is decoded by the platform (TextDecoder, JSON.parse) instead of ethers' own UTF-8 decoder, which is
 * written in JavaScript: a restarted coordinator's scan of 5,300 logs (a 4.4 MB answer) spent ~650 ms there
 * (bench/keepers.ts). A body that is not UTF-8 JSON still fails with ethers' own error once retries are spent, so
 * callers classify failures as before.
 */
import {
  FetchRequest,
  JsonRpcProvider,
  keccak256,
  type JsonRpcApiProviderOptions,
  type JsonRpcPayload,
  type JsonRpcResult,
  type Networkish,
  type Subscriber,
  type Subscription,
} from "ethers";
import { sleep } from "../run/retry.ts";
import {
  backoffWithJitter,
  DUPLICATE_SEND,
  faultOf,
  limiterFor,
  markFault,
  parseRetryAfter,
  rpcSettings,
  rpcStats,
  rpsFor,
  splitRpcUrls,
  statusFault,
  type RateLimiter,
  type RpcSettings,
  type RpcStats,
} from "./rpc.ts";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Faults after which the request surely did not take effect (refused before it arrived, or turned away). */
const DELIVERY_SAFE = new Set<string>(["http429", "refused"]);

/** eth_sendTransaction (the node signs and picks the nonce): repeating it after an unknown outcome sends twice. */
function hasNodeSignedSend(payload: JsonRpcPayload | JsonRpcPayload[]): boolean {
  return (Array.isArray(payload) ? payload : [payload]).some((p) => p.method === "eth_sendTransaction");
}

export interface RpcClientOptions extends Partial<RpcSettings> {
  /** Counters for this client (default: the process's `rpcStats`). */
  stats?: RpcStats;
  /** Randomness for the jitter (tests). */
  random?: () => number;
  /** Told about each retry (a log line). */
  onRetry?: (info: { url: string; kind: string; attempt: number; delayMs: number; error: unknown }) => void;
}

interface Endpoint {
  url: string;
  limiter?: RateLimiter;
  failures: number;
}

type RpcAnswer = JsonRpcResult | { id: number; error: { code: number; message: string; data?: unknown } };

export class JsonRpcClient extends JsonRpcProvider {
  readonly rpc: RpcSettings;
  readonly stats: RpcStats;
  readonly endpoints: readonly string[];
  readonly #endpoints: Endpoint[];
  readonly #random: () => number;
  readonly #onRetry: RpcClientOptions["onRetry"];
  readonly #stop = new AbortController();
  #current = 0;

  constructor(
    url?: string | FetchRequest,
    network?: Networkish,
    options?: JsonRpcApiProviderOptions,
    rpc: RpcClientOptions = {},
  ) {
    const spec = url instanceof FetchRequest ? url.url : (url ?? "http://localhost:8545");
    const urls = splitRpcUrls(spec);
    if (urls.length === 0) throw new Error(`no RPC URL in "${spec}"`);
    let first: string | FetchRequest = urls[0];
    if (url instanceof FetchRequest) {
      first = url.clone();
      first.url = urls[0];
    }
    super(first, network, options);
    const { stats, random, onRetry, ...settings } = rpc;
    this.rpc = rpcSettings(settings);
    this.stats = stats ?? rpcStats;
    this.#random = random ?? Math.random;
    this.#onRetry = onRetry;
    this.endpoints = urls;
    this.#endpoints = urls.map((u) => ({
      url: u,
      failures: 0,
      limiter: limiterFor(u, rpsFor(u, this.rpc), this.rpc.burst),
    }));
  }

  /** The URL requests go to now. */
  get currentUrl(): string {
    return this.#endpoints[this.#current].url;
  }

  /** `tx.wait()`'s receipt polling, with a failed poll as "unknown" (ethers' own leaves it an unhandled rejection). */
  override _getSubscriber(sub: Subscription): Subscriber {
    if (sub.type === "transaction") return new ReceiptPoller(this, sub.hash);
    return super._getSubscriber(sub);
  }

  override destroy(): void {
    this.#stop.abort();
    super.destroy();
  }

  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const list = Array.isArray(payload) ? payload : [payload];
    this.stats.calls += list.length;
    const answers = await this.#withRetries(payload);
    return this.#settleDuplicateSends(list, answers);
  }

  /** Attempts until an answer, or until the time bound: then the last error, never a made-up answer. */
  async #withRetries(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<RpcAnswer[]> {
    const { budgetMs, baseMs, maxDelayMs, failoverAfter } = this.rpc;
    const attemptMs = this.rpc.attemptTimeoutMs ?? Math.max(1_000, Math.floor(budgetMs / 2));
    const deadline = performance.now() + budgetMs;
    let previous: unknown; // the node's last failure, kept for when the bound itself cuts the next attempt short
    for (let attempt = 1; ; attempt++) {
      const index = this.#current;
      const endpoint = this.#endpoints[index];
      const wait = endpoint.limiter?.reserve() ?? 0;
      if (wait > 0) await sleep(wait, this.#stop.signal);
      const left = deadline - performance.now();
      const cut = left < attemptMs;
      try {
        const answers = await this.#attempt(endpoint.url, payload, Math.max(1, Math.floor(Math.min(attemptMs, left))));
        endpoint.failures = 0;
        return answers;
      } catch (err) {
        const fault = faultOf(err);
        if (!fault || this.#stop.signal.aborted) throw err;
        // A timeout of the bound's own making says nothing about the node: the node's last answer is the error.
        if (fault.kind === "timeout" && cut && previous !== undefined) {
          this.stats.exhausted += 1;
          throw previous;
        }
        previous = err;
        // A node-signed send whose request may have arrived is not sent again: the node would sign a second one.
        if (!DELIVERY_SAFE.has(fault.kind) && hasNodeSignedSend(payload)) throw err;
        this.stats.faults[fault.kind] += 1;
        endpoint.failures += 1;
        let delay = Math.max(fault.retryAfterMs ?? 0, backoffWithJitter(attempt, baseMs, maxDelayMs, this.#random));
        // Only a failure of the URL in use moves on (calls in flight on the old one must not move it back).
        if (this.#endpoints.length > 1 && index === this.#current && endpoint.failures >= failoverAfter) {
          endpoint.failures = 0;
          this.#current = (index + 1) % this.#endpoints.length;
          this.stats.failovers += 1;
          delay = fault.kind === "http429" ? delay : 0; // another node: no reason to wait (a 429 is the same limit)
        }
        if (performance.now() + delay >= deadline) {
          this.stats.exhausted += 1;
          throw err;
        }
        this.stats.retries[fault.kind] += 1;
        this.#onRetry?.({ url: endpoint.url, kind: fault.kind, attempt, delayMs: delay, error: err });
        await sleep(delay, this.#stop.signal);
        if (this.#stop.signal.aborted) throw err;
      }
    }
  }

  /** One HTTP request; a transport fault comes back as an error marked with its kind. */
  async #attempt(url: string, payload: JsonRpcPayload | JsonRpcPayload[], timeoutMs: number): Promise<RpcAnswer[]> {
    const request = this._getConnection();
    request.url = url;
    request.timeout = timeoutMs;
    request.retryFunc = async () => false; // ethers' own 429 loop off: retries are ours, and bounded
    request.body = JSON.stringify(payload);
    request.setHeader("content-type", "application/json");
    this.stats.requests += 1;
    const response = await request.send();
    const kind = statusFault(response.statusCode);
    try {
      response.assertOk();
    } catch (err) {
      if (!kind) throw err;
      throw markFault(err, { kind, retryAfterMs: parseRetryAfter(response.headers["retry-after"]) });
    }
    let body: unknown;
    try {
      body = JSON.parse(UTF8.decode(response.body ?? new Uint8Array()));
    } catch {
      try {
        body = response.bodyJson; // throws ethers' "response body is not valid JSON" (or UTF-8)
      } catch (err) {
        throw markFault(err, { kind: "badJson" });
      }
    }
    if (!body || typeof body !== "object")
      throw markFault(new Error(`not a JSON-RPC answer from ${url}`), { kind: "badJson" });
    return (Array.isArray(body) ? body : [body]) as RpcAnswer[]; // errors among them too, as in ethers
  }

  /**
   * A raw transaction the node calls known (or whose nonce it calls used) is ours when the node has a transaction
   * with its hash: then the answer is that hash, as if this attempt had delivered it.
   */
  async #settleDuplicateSends(list: JsonRpcPayload[], answers: RpcAnswer[]): Promise<JsonRpcResult[]> {
    for (const p of list) {
      if (p.method !== "eth_sendRawTransaction") continue;
      const i = answers.findIndex((a) => a && a.id === p.id);
      const a = answers[i] as { error?: { message?: string } } | undefined;
      if (!a?.error || !DUPLICATE_SEND.test(String(a.error.message ?? ""))) continue;
      const raw = (p.params as unknown[] | undefined)?.[0];
      if (typeof raw !== "string") continue;
      const hash = keccak256(raw);
      const [found] = await this.#withRetries({
        jsonrpc: "2.0",
        id: p.id,
        method: "eth_getTransactionByHash",
        params: [hash],
      });
      const tx = (found as { result?: { hash?: string } | null }).result;
      if (tx && typeof tx.hash === "string" && tx.hash.toLowerCase() === hash) {
        this.stats.duplicateSends += 1;
        answers[i] = { id: p.id, result: hash } as JsonRpcResult;
      }
    }
    return answers as JsonRpcResult[];
  }
}

/**
 * ethers' PollingTransactionSubscriber drops the promise of each poll, so one receipt read that fails (an RPC
 * outage past the retry bound, or a request cut by `destroy()`) is an unhandled rejection: Node ends the process.
 * This one polls the same way (at start, then at each new block) and takes a failed read as unknown: no receipt
 * is emitted, and the next block asks again. `tx.wait()` keeps waiting, as it would for a receipt not yet mined.
 */
class ReceiptPoller implements Subscriber {
  readonly #provider: JsonRpcProvider;
  readonly #hash: string;
  #running = false;
  readonly #poll = () => void this.#check();

  constructor(provider: JsonRpcProvider, hash: string) {
    this.#provider = provider;
    this.#hash = hash;
  }

  async #check(): Promise<void> {
    try {
      const receipt = await this.#provider.getTransactionReceipt(this.#hash);
      if (receipt) await this.#provider.emit(this.#hash, receipt);
    } catch {
      // unknown: asked again at the next block
    }
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#check();
    void this.#provider.on("block", this.#poll);
  }

  stop(): void {
    if (!this.#running) return;
    this.#running = false;
    void this.#provider.off("block", this.#poll);
  }

  pause(): void {
    this.stop();
  }

  resume(): void {
    this.start();
  }
}
