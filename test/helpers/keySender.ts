/**
 * A second process on one key (test/sdk/txManager.ts): sends N calls concurrently through its own managed wallet
 * and prints the nonces and hashes it used as one JSON line. Run only as a script (mocha loads this file too).
 */
import { JsonRpcProvider, Wallet } from "ethers";
import { pathToFileURL } from "node:url";
import { managedWallet, mined } from "../../sdk/node/txManager.ts";

async function main(rpc: string, key: string, to: string, count: number, tag: string) {
  const provider = new JsonRpcProvider(rpc, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 50 });
  const wallet = managedWallet(new Wallet(key), provider, { pollMs: 50 });
  const sent = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      wallet.sendTransaction({ to, data: "0x" + Buffer.from(`${tag}-${i}`).toString("hex"), gasLimit: 60_000n }),
    ),
  );
  const receipts = await Promise.all(sent.map((tx) => mined(tx)));
  console.log(JSON.stringify({ nonces: sent.map((t) => t.nonce), mined: receipts.map((r) => r?.status) }));
  provider.destroy();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [rpc, key, to, count, tag] = process.argv.slice(2);
  main(rpc, key, to, Number(count), tag).catch((err) => {
    console.error(String(err?.message ?? err));
    process.exit(1);
  });
}
