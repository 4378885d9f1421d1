// Run where the `capelab` tarball is installed (tarball.sh): the PLD ε of the DP-VI paper's
// setting (seed 004: z = 2.042, Poisson q = 100/30162, T = 20 000, δ = 1e-5), imported by the
// package's name as a user would. dp-accounting 0.6.0's PLD accountant gives 0.9088.
import { Accountant } from 'capelab';

const accountant = new Accountant();
accountant.add({ noiseMultiplier: 2.042, samplingRate: 100 / 30162, count: 20_000 });
const { epsilon, pld, rdp, bound } = accountant.epsilon(1e-5);
console.log(
  `DP-VI (z = 2.042, q = 100/30162, T = 20 000, δ = 1e-5): ε = ${epsilon.toFixed(3)} (${bound.toUpperCase()}; ` +
    `PLD ${pld.toFixed(4)}, RDP ${rdp.toFixed(4)})`,
);
if (Math.abs(pld - 0.909) > 5e-4) {
  console.error(`expected PLD ε = 0.909, got ${pld}`);
  process.exit(1);
}
