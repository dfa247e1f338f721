/**
 * The embedded S3 server as a process of its own, for `--hosts` (it runs on the store's host):
 * `node demo/s3server.ts DIR ADDRESS PORT` prints `listening ENDPOINT` and serves until SIGTERM.
 */
import { startEmbeddedS3 } from "../workloads/store/embedded.ts";

const [dir, address, port] = process.argv.slice(2);
if (!dir || !address || !port) {
  console.error("usage: node demo/s3server.ts DIR ADDRESS PORT");
  process.exit(2);
}
const s3 = await startEmbeddedS3({ dir, address, port: Number(port) });
console.log(`listening ${s3.endpoint}`);
const stop = () => void s3.close().then(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
