/**
 * ethers' JsonRpcProvider with each answer decoded by the platform (TextDecoder, JSON.parse) instead of ethers' own
 * UTF-8 decoder, which is written in JavaScript: a restarted coordinator's scan of 5,300 logs (a 4.4 MB answer)
 * spent ~650 ms there (bench/keepers.ts). Everything else is ethers' `_send`, unchanged; a body that is not UTF-8
 * JSON still fails with ethers' own error, so callers classify failures as before.
 */
import { JsonRpcProvider, type JsonRpcPayload, type JsonRpcResult } from "ethers";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

export class JsonRpcClient extends JsonRpcProvider {
  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const request = this._getConnection();
    request.body = JSON.stringify(payload);
    request.setHeader("content-type", "application/json");
    const response = await request.send();
    response.assertOk();
    let body: unknown;
    try {
      body = JSON.parse(UTF8.decode(response.body ?? new Uint8Array()));
    } catch {
      body = response.bodyJson; // throws ethers' "response body is not valid JSON" (or UTF-8)
    }
    return (Array.isArray(body) ? body : [body]) as JsonRpcResult[]; // errors among them too, as in ethers
  }
}
