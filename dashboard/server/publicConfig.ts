/**
 * What /api/config may hand a browser: no secrets. The RPC URL without its credentials (userinfo, key-like query
 * parameters, key-like path segments such as Alchemy's /v2/KEY or Infura's /v3/KEY), the store's environment
 * without keys, and which read-only JSON-RPC calls the server relays for a browser whose RPC URL was redacted.
 * Pure: strings in, strings out.
 */

export const REDACTED = "REDACTED";

/** Query parameters that carry a credential by their name (key=, apikey=, api_key=, token=, secret= …). */
const SECRET_PARAM = /key|token|secret|auth|pass|signature|credential|session/i;
/** A path segment that holds a key: after a version segment (/v2/KEY, /v3/KEY), or long, key-like on its own. */
const VERSION_SEGMENT = /^v\d+$/i;
const KEY_LIKE = /^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_-]{20,}$/;

export interface PublicRpc {
  url: string;
  /** Whether anything was taken out: the URL then no longer reaches the chain, the browser reads through the server. */
  redacted: boolean;
}

/** The RPC URL with every credential-looking part replaced by REDACTED; a URL with none is returned unchanged. */
export function publicRpcUrl(rpc: string): PublicRpc {
  let url: URL;
  try {
    url = new URL(rpc);
  } catch {
    return { url: REDACTED, redacted: true }; // unparsable: nothing can be told apart
  }
  let redacted = false;
  if (url.username || url.password) {
    url.username = REDACTED;
    url.password = "";
    redacted = true;
  }
  for (const [name, value] of [...url.searchParams]) {
    if (SECRET_PARAM.test(name) && value) {
      url.searchParams.set(name, REDACTED);
      redacted = true;
    }
  }
  const segments = url.pathname.split("/");
  const kept = segments.map((s, i) => (isKeySegment(s, segments[i - 1]) ? REDACTED : s));
  if (kept.some((s, i) => s !== segments[i])) {
    url.pathname = kept.join("/");
    redacted = true;
  }
  return redacted ? { url: url.href, redacted } : { url: rpc, redacted };
}

function isKeySegment(segment: string, before: string | undefined): boolean {
  if (!segment) return false;
  return (before !== undefined && VERSION_SEGMENT.test(before) && segment.length >= 8) || KEY_LIKE.test(segment);
}

/** Environment variables that hold a credential by their name (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY …). */
const SECRET_VAR = /KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|SESSION/i;

export interface PublicStoreEnv {
  env: Record<string, string>;
  /** The store is the embedded S3 server with its published test key pair: the page may write that pair itself. */
  testKeyPair: boolean;
}

/** The store's environment without its keys; `testPair` (VAR → value) is the embedded server's published pair. */
export function publicStoreEnv(env: Record<string, string>, testPair: Record<string, string>): PublicStoreEnv {
  const kept = Object.fromEntries(Object.entries(env).filter(([k]) => !SECRET_VAR.test(k)));
  const testKeyPair = Object.entries(testPair).every(([k, v]) => env[k] === v);
  return { env: kept, testKeyPair };
}

/** The JSON-RPC reads the browser's chain reader makes (dashboard/src/sources/chain.ts); nothing that writes. */
const READS = new Set([
  "eth_chainId",
  "net_version",
  "eth_blockNumber",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_call",
  "eth_getLogs",
  "eth_getBalance",
  "eth_getCode",
  "eth_getTransactionByHash",
  "eth_getTransactionReceipt",
]);

/** Why the server will not relay `body` to the RPC (one JSON-RPC read, no batch), or undefined when it will. */
export function rpcRelayProblem(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "one JSON-RPC request, not a batch";
  const method = (body as { method?: unknown }).method;
  if (typeof method !== "string") return "a JSON-RPC request names its method";
  if (!READS.has(method)) return `${method.slice(0, 60)} is not a read this dashboard relays`;
  return undefined;
}

/** Where the relay sends: fetch refuses a URL with userinfo, so it goes as a Basic authorization header. */
export function rpcTarget(rpc: string): { url: string; headers: Record<string, string> } {
  const url = new URL(rpc);
  if (!url.username && !url.password) return { url: rpc, headers: {} };
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = "";
  url.password = "";
  return { url: url.href, headers: { authorization: `Basic ${Buffer.from(pair).toString("base64")}` } };
}
