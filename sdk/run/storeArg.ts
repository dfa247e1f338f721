/** `--store URL` as the agent and the verifier take it, checked before a key, a file or the chain is touched. */
import { UsageError } from "./args.ts";
import { parseStoreUrl, StoreUrlError } from "../../workloads/store/url.ts";

/** `spec` if it names a store (file://DIR, s3://BUCKET/PREFIX or a folder); anything else is a usage error. */
export function storeUrlArg(spec: string): string {
  try {
    parseStoreUrl(spec);
    return spec;
  } catch (err) {
    if (err instanceof StoreUrlError) throw new UsageError(err.message);
    throw err;
  }
}
