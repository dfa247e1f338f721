// The loss a training step reports: each atom's mean negative log-likelihood. Shown to people (progress lines,
// heartbeats), never trained on or verified, so the log is taken here, in float64, rather than in the graph
// (families/mlp/graphs.ts outputLossParts). The held-out loss the verifiers judge stays in the evaluation graph.

type Outputs = Record<string, { data: unknown }>;

/**
 * Each atom's mean loss from a gradient graph's outputs: its own `atom_loss [atoms]` when it has one (the bench's float MLP graphs: LogSoftmax),
 * else from `loss_shifted [atoms, S, C]` (z − max z) and `loss_exp_sum [atoms, S, 1]` (Σ e^(z − max z)): a row's loss
 * is ln Σ − Σ_c y_c·(z_c − max z), with y the rows' label distributions [atoms, S, C] (one-hot).
 */
export function atomLosses(out: Outputs, y: Float32Array, atoms: number): Float64Array {
  if (out.atom_loss) return Float64Array.from(out.atom_loss.data as Float32Array);
  const shifted = out.loss_shifted.data as Float32Array;
  const sums = out.loss_exp_sum.data as Float32Array;
  const rows = sums.length;
  const C = shifted.length / rows;
  const S = rows / atoms;
  if (!Number.isInteger(C) || !Number.isInteger(S) || y.length !== shifted.length)
    throw new RangeError(
      `loss outputs of ${rows} rows, ${shifted.length} logits and ${y.length} labels do not fit ${atoms} atoms`,
    );
  const out64 = new Float64Array(atoms);
  for (let a = 0; a < atoms; a++) {
    let sum = 0;
    for (let r = a * S; r < (a + 1) * S; r++) {
      let picked = 0;
      for (let c = r * C; c < (r + 1) * C; c++) picked += y[c] * shifted[c];
      sum += Math.log(sums[r]) - picked;
    }
    out64[a] = sum / S;
  }
  return out64;
}
