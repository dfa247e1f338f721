// What /api/config may hand a browser (dashboard/server/publicConfig.ts): every credential-looking part of the RPC
// URL redacted, a URL without one unchanged; the store's environment without keys; the relay's reads.
import { expect } from "chai";
import {
  publicRpcUrl,
  publicStoreEnv,
  REDACTED,
  rpcRelayProblem,
  rpcTarget,
} from "../../dashboard/server/publicConfig.ts";
import { EMBEDDED_S3_TEST_PAIR, provideCommand } from "../../dashboard/src/model/provideCommand.ts";
import { chainUrl, type DashboardConfig } from "../../dashboard/src/sources/config.ts";
import { S3RVER_CREDENTIALS } from "../../workloads/store/embedded.ts";

describe("dashboard: /api/config without secrets", function () {
  it("leaves a URL without credentials as it is (local chains, public endpoints)", function () {
    for (const url of [
      "http://127.0.0.1:8545",
      "http://10.0.0.2:8545/",
      "https://sepolia.base.org",
      "https://base-sepolia-rpc.publicnode.com",
      "http://127.0.0.1:8545/?chain=84532",
    ])
      expect(publicRpcUrl(url)).to.deep.equal({ url, redacted: false });
  });

  it("redacts the keys of known providers' paths, key-like segments, key parameters and userinfo", function () {
    const cases: [string, string][] = [
      [
        "https://base-sepolia.g.alchemy.com/v2/abcDEF123_ghiJKL456",
        `https://base-sepolia.g.alchemy.com/v2/${REDACTED}`,
      ],
      ["https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef", `https://mainnet.infura.io/v3/${REDACTED}`],
      ["https://x.quiknode.pro/7f3a9c0d1e2b4a5f6c7d8e9f0a1b2c3d/", `https://x.quiknode.pro/${REDACTED}/`],
      [
        "https://rpc.ankr.com/base_sepolia/9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d",
        `https://rpc.ankr.com/base_sepolia/${REDACTED}`,
      ],
      ["https://rpc.example.org/?key=s3cret", `https://rpc.example.org/?key=${REDACTED}`],
      ["https://rpc.example.org/?apikey=s3cret&chain=1", `https://rpc.example.org/?apikey=${REDACTED}&chain=1`],
      ["https://rpc.example.org/?api_key=s3cret", `https://rpc.example.org/?api_key=${REDACTED}`],
      ["https://rpc.example.org/?token=s3cret", `https://rpc.example.org/?token=${REDACTED}`],
      ["https://user:s3cret@rpc.example.org/", `https://${REDACTED}@rpc.example.org/`],
    ];
    for (const [url, want] of cases) expect(publicRpcUrl(url), url).to.deep.equal({ url: want, redacted: true });
    expect(publicRpcUrl("not a url")).to.deep.equal({ url: REDACTED, redacted: true });
  });

  it("the relay reaches a URL with userinfo through a Basic authorization header", function () {
    expect(rpcTarget("http://127.0.0.1:8545")).to.deep.equal({ url: "http://127.0.0.1:8545", headers: {} });
    expect(rpcTarget("https://al%40ice:p%3Ass@rpc.example.org/v2/k")).to.deep.equal({
      url: "https://rpc.example.org/v2/k",
      headers: { authorization: `Basic ${Buffer.from("al@ice:p:ss").toString("base64")}` },
    });
  });

  it("relays one read at a time, nothing that writes", function () {
    for (const m of ["eth_chainId", "eth_blockNumber", "eth_call", "eth_getLogs", "eth_getBlockByNumber"])
      expect(rpcRelayProblem({ jsonrpc: "2.0", id: 1, method: m, params: [] }), m).to.equal(undefined);
    for (const m of ["eth_sendRawTransaction", "eth_sendTransaction", "anvil_setBalance", "evm_increaseTime"])
      expect(rpcRelayProblem({ method: m }), m).to.match(/not a read/);
    expect(rpcRelayProblem([{ method: "eth_chainId" }])).to.match(/not a batch/);
    expect(rpcRelayProblem({ id: 1 })).to.match(/names its method/);
  });

  it("keeps the store's environment without its keys, and tells the embedded server's public pair apart", function () {
    const embedded = {
      AWS_ENDPOINT_URL: "http://127.0.0.1:9000",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    };
    expect(publicStoreEnv(embedded, EMBEDDED_S3_TEST_PAIR)).to.deep.equal({
      env: { AWS_ENDPOINT_URL: "http://127.0.0.1:9000", AWS_REGION: "us-east-1" },
      testKeyPair: true,
    });
    const real = { AWS_ACCESS_KEY_ID: "AKIA…", AWS_SECRET_ACCESS_KEY: "s3cret", AWS_SESSION_TOKEN: "t" };
    expect(publicStoreEnv(real, EMBEDDED_S3_TEST_PAIR)).to.deep.equal({ env: {}, testKeyPair: false });
  });

  it("the page's copy of the embedded pair is the server's own; the command names it only for that store", function () {
    expect(EMBEDDED_S3_TEST_PAIR).to.deep.equal({
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    });
    const c = (storeTestKeyPair: boolean) =>
      ({
        chainId: "31337",
        rpc: "http://127.0.0.1:8545",
        deploymentFile: "d.json",
        coordinator: "http://127.0.0.1:8600",
        store: "s3://gpuchain/checkpoints",
        storeEnv: { AWS_ENDPOINT_URL: "http://127.0.0.1:9000" },
        storeTestKeyPair,
      }) as unknown as DashboardConfig;
    expect(provideCommand(c(true), "dave", "0.001", "")).to.match(
      /^AWS_ENDPOINT_URL=http:\/\/127\.0\.0\.1:9000 AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER npx /,
    );
    expect(provideCommand(c(false), "dave", "0.001", "")).to.match(/^AWS_ENDPOINT_URL=\S+ npx gpuchain provide /);
  });

  it("the browser reads the chain at the RPC URL, or through the relay where it was redacted", function () {
    const c = { rpc: "http://127.0.0.1:8545" } as DashboardConfig;
    expect(chainUrl(c, "http://127.0.0.1:8700/?page=status")).to.equal("http://127.0.0.1:8545");
    expect(chainUrl({ ...c, rpcRedacted: true }, "http://127.0.0.1:8700/?page=status")).to.equal(
      "http://127.0.0.1:8700/api/rpc",
    );
  });
});
