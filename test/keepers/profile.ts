/**
 * The proven-profile safety net in the coordinator: a template goes only to providers whose signed heartbeat reports an
 * arithmetic profile proven to give the template's bits (workloads/profile.ts).
 */
import { machineId } from "../../sdk/run/machine.ts";
import { expect } from "chai";
import { getAddress, Wallet } from "ethers";
import {
  exclusionOf,
  planCoordinator,
  type CoordinatorJob,
  type CoordinatorView,
} from "../../keepers/coordinator/decide.ts";
import { HeartbeatBook } from "../../keepers/coordinator/heartbeats.ts";
import { checkHeartbeat, signHeartbeat } from "../../sdk/rules/heartbeat.ts";
import { isProvenProfile, loadTemplate } from "../../workloads/index.ts";
import { openJob } from "../helpers/jobs.ts";

const NOW = 1_000_000;
const PROVEN = "onnxruntime-1.30.0/cpu/x86_64-avx2-fma";
const UNPROVEN = "onnxruntime-1.30.0/cuda/gpu";
const mnist = loadTemplate("mnist-mlp");
const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const job: CoordinatorJob = openJob({ templateId: mnist.templateId, provider: addr(0) });

function view(profiles: (string | undefined)[]): CoordinatorView {
  const providers = profiles.map((_, i) => ({
    address: addr(i + 1),
    pricePerStep: 900n - BigInt(i),
    memoryMiB: 1024,
    active: true,
    registered: true,
  }));
  return {
    nowMs: NOW,
    chainTime: 1_000n,
    timeoutMs: 5_000,
    isCoordinator: true,
    jobs: [job],
    providers,
    lastBeat: new Map(
      providers.map((p, i) => [
        p.address.toLowerCase(),
        { receivedAt: NOW, jobId: "0", epoch: "0", profile: profiles[i] },
      ]),
    ),
    lastJobBeat: new Map(),
    watchStart: new Map(),
    fenced: new Map(),
    memoryNeedMiB: () => 0,
    profileProven: (id, p) => id === mnist.templateId && isProvenProfile(mnist, p),
  };
}

describe("coordinator: arithmetic profile safety net", function () {
  it("excludes a provider whose profile is not proven or missing, and assigns a proven one", function () {
    const v = view([PROVEN, UNPROVEN, undefined]); // the cheapest two are unproven / silent about their profile
    expect(exclusionOf(job, v.providers[1], v, new Set())).to.equal("arithmetic profile not proven");
    expect(exclusionOf(job, v.providers[2], v, new Set())).to.equal("arithmetic profile not proven");
    expect(exclusionOf(job, v.providers[0], v, new Set())).to.equal(undefined);
    const [d] = planCoordinator(v);
    expect(d.action).to.equal("assign");
    expect(d.provider).to.equal(v.providers[0].address);
  });

  it("waits, naming the reason, when no provider's profile is proven", function () {
    const [d] = planCoordinator(view([UNPROVEN]));
    expect(d.action).to.equal("wait");
    expect(d.reason).to.match(/arithmetic profile not proven/);
  });

  it("the profile is signed: a beat whose profile was changed in transit is refused; the book keeps it", async function () {
    const w = new Wallet(Wallet.createRandom().privateKey);
    const escrow = Wallet.createRandom().address;
    const scope = { chainId: "31337", escrow };
    const h = await signHeartbeat(w, {
      chainId: "31337",
      escrow,
      machine: machineId(),
      provider: w.address,
      jobId: "0",
      epoch: "0",
      step: 0,
      profile: PROVEN,
      sentAt: NOW,
    });
    expect(checkHeartbeat(h, scope, NOW, undefined)).to.deep.equal({ ok: true });
    expect(checkHeartbeat({ ...h, profile: UNPROVEN }, scope, NOW, undefined).ok).to.equal(false);
    const book = new HeartbeatBook(scope, 30_000, () => true);
    expect((await book.receive(h, NOW)).ok).to.equal(true);
    expect(book.lastBeat.get(w.address.toLowerCase())?.profile).to.equal(PROVEN);
    expect(await book.receive({ ...h, sentAt: NOW + 1, profile: "x".repeat(200) }, NOW)).to.deep.equal({
      ok: false,
      status: 400,
      reason: "profile must be a short printable string",
    });
  });
});
