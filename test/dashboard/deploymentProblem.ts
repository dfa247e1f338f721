// A stale deployment said as one (dashboard/src/model/deploymentProblem.ts): where the page would say "the chain is
// not answering", a chain that answers without the deployment's contracts is said as that, and the page reads its
// config again when the server's deployment changed. The browser side: test/dashboard/staleDeployment.ts.
import { expect } from "chai";
import {
  chainDownWords,
  configBehind,
  deploymentProblemOf,
  deploymentProblemTitle,
} from "../../dashboard/src/model/deploymentProblem.ts";

const STALE =
  "no contract code at the escrow address 0x5FbDB2315678afecb367f032d93F642f64180aa3 on chain 31337 " +
  "(http://127.0.0.1:8545): ignition/deployments/chain-31337/deployed_addresses.json is stale (was the chain " +
  "restarted?); deploy again with `npx hardhat ignition deploy …`";
const OTHER = "d.json was deployed on chain 84532, but the RPC at http://127.0.0.1:8545 is chain 31337: pass …";
const config = (deploymentProblem?: string | null, escrow = "0xAA", chainId = "31337") => ({
  chainId,
  deploymentProblem,
  deployment: { escrow },
});

describe("dashboard: a stale deployment is not 'the chain is not answering'", function () {
  it("the snapshot's word (fresher) over the config's; none for a recording", function () {
    expect(deploymentProblemOf(false, { deploymentProblem: STALE }, config(null))).to.equal(STALE);
    expect(deploymentProblemOf(false, { deploymentProblem: null }, config(STALE))).to.equal(null);
    expect(deploymentProblemOf(false, null, config(STALE))).to.equal(STALE);
    expect(deploymentProblemOf(false, {}, config(STALE)), "an older server's snapshot").to.equal(STALE);
    expect(deploymentProblemOf(true, { deploymentProblem: STALE }, config(STALE))).to.equal(null);
  });

  it("says the chain answers and what is wrong with the file", function () {
    expect(chainDownWords(null)).to.equal("the chain is not answering");
    expect(chainDownWords(STALE)).to.match(/^the chain answers, but the deployment file is stale/);
    expect(chainDownWords(OTHER)).to.match(/^the chain answers, but the deployment file was made on another chain/);
    expect(deploymentProblemTitle(STALE)).to.equal("Deployment file is stale");
    expect(deploymentProblemTitle(OTHER)).to.equal("Deployment file is for another chain");
  });

  it("reads the config again when the deployment became stale, was fixed, moved, or the chain answered since", function () {
    expect(configBehind(config(null), { deploymentProblem: null, escrow: "0xaa", chainId: "31337" })).to.equal(false);
    expect(configBehind(config(null), { deploymentProblem: STALE })).to.equal(true);
    expect(configBehind(config(STALE), { deploymentProblem: null })).to.equal(true);
    expect(configBehind(config(null), { deploymentProblem: null, escrow: "0xBB" })).to.equal(true);
    expect(configBehind(config(null, "0xAA", "unknown"), { chainId: "31337" })).to.equal(true);
    expect(configBehind(config(null), { chainId: null }), "the chain stopped answering: keep what is known").to.equal(
      false,
    );
    expect(configBehind(config(STALE), {}), "an older server says nothing").to.equal(false);
    expect(configBehind(null, { deploymentProblem: STALE })).to.equal(false);
  });
});
