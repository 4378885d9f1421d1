// The npm package `capelab` in Node (its nodejs build), against numbers known independently of
// it: the DP-VI setting's PLD ε (dp-accounting gives 0.9088), the analytic Gaussian's δ(ε) in
// closed form, CAPE's spec test vectors, and private means whose truth the test computes itself.
//
//   crates/js/build.sh                       # -> crates/js/pkg (web and node builds)
//   node --test crates/js/tests/
//
// Env: CAPELAB_NPM_PKG, the assembled package folder (default crates/js/pkg).

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { memoryRoom, pooledMean, rowsFor } from './room.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(process.env.CAPELAB_NPM_PKG ?? path.join(here, '..', 'pkg'));
// The package's own entry for Node (its `exports` "node" condition): the CommonJS build.
const require = createRequire(import.meta.url);
const capelab = require(path.join(pkgDir, 'node', 'capelab.js'));
const { Accountant, Ledger, MeanAggregator, MeanSite, Site, capeBounds, joinFrame, readFrame, sendFrame } = capelab;

/** How many theoretical standard deviations an estimate may be off (P(fail) < 1e-6). */
const SDS = 5;

/** The standard normal CDF, for the analytic Gaussian mechanism's curve (Balle & Wang 2018). */
function phi(x) {
  // erfc by Numerical Recipes' Chebyshev fit (|error| < 1.2e-7), plenty for a 1e-6 check.
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + z / 2);
  const erfc = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

describe('the accountant', () => {
  it("DP-VI's setting: PLD ε = 0.909 at z = 2.042, q = 100/30162, T = 20 000, δ = 1e-5", () => {
    const acc = new Accountant();
    acc.add({ noiseMultiplier: 2.042, samplingRate: 100 / 30162, count: 20_000 });
    assert.equal(acc.releases, 20_000);
    const eps = acc.epsilon(1e-5);
    assert.ok(Math.abs(eps.pld - 0.909) < 5e-4, `PLD ε ${eps.pld}`);
    assert.ok(Math.abs(eps.rdp - 0.9948) < 5e-5, `RDP ε ${eps.rdp}`);
    assert.equal(eps.rdpOrder, 18);
    assert.deepEqual([eps.epsilon, eps.bound], [eps.pld, 'pld']);
  });

  it('unsampled Gaussians compose exactly: δ(ε) is the analytic curve at z/√T', () => {
    const acc = new Accountant();
    acc.add({ noiseMultiplier: 2, count: 4 }); // = one release at z = 1
    const exact = phi(-1 + 0.5) - Math.E * phi(-1 - 0.5); // 0.12693673…
    const { delta, pld } = acc.delta(1);
    assert.ok(Math.abs(pld - exact) < 1e-6 && Math.abs(exact - 0.1269367375) < 1e-6, `${pld} vs ${exact}`);
    assert.equal(delta, pld);
    // and ε(δ) inverts it
    assert.ok(Math.abs(acc.epsilon(exact).pld - 1) < 1e-4);
  });

  it("a colluding adversary's view costs more (z/√c_S)", () => {
    const plain = new Accountant();
    plain.add({ noiseMultiplier: 8 });
    const colluded = new Accountant();
    colluded.add({ noiseMultiplier: 8, collusionFactor: 28 / 15 });
    const same = new Accountant();
    same.add({ noiseMultiplier: 8 / Math.sqrt(28 / 15) });
    assert.ok(colluded.epsilon(1e-5).epsilon > plain.epsilon(1e-5).epsilon);
    assert.ok(Math.abs(colluded.epsilon(1e-5).epsilon - same.epsilon(1e-5).epsilon) < 1e-9);
  });

  it('bad input is refused with the value named', () => {
    const acc = new Accountant();
    assert.throws(() => acc.add({ noiseMultiplier: 1, count: 0 }), /count = 0/);
    assert.throws(() => acc.add({ noiseMultiplier: -2 }), /z = -2/);
    assert.throws(() => acc.add({ noiseMultiplier: 1, samplingRate: 1.5 }), /q = 1\.5/);
    assert.throws(() => acc.add({ noiseMultiplier: 1, collusionFactr: 2 }), /event has no field `collusionFactr` \(its fields: noiseMultiplier, count, samplingRate, collusionFactor\)/);
    assert.throws(() => acc.epsilon(2), /δ = 2/);
    assert.equal(acc.releases, 0, 'nothing was added');
  });
});

describe("CAPE's bounds", () => {
  it('match the spec §2 test vectors (S = 4, z = 10, ε = 0.5)', () => {
    const b = capeBounds(4, 10, 0.5);
    assert.equal(b.colluders, 1);
    assert.ok(Math.abs(b.loss.mu_z - 0.0064762) < 1e-7, `μ_z ${b.loss.mu_z}`);
    assert.ok(Math.abs(b.delta_pool / 4.658e-6 - 1) < 1e-3, `δ_pool ${b.delta_pool}`);
    assert.ok(Math.abs(b.delta_conv / 5.492e-2 - 1) < 1e-3, `δ_conv ${b.delta_conv}`);
    assert.ok(Math.abs(b.full_view.c_s - 28 / 15) < 1e-12);
    assert.ok(Math.abs(b.paper_eq1_c_s - 1.47451) < 1e-5);
    assert.ok(b.delta_tail < b.delta_phi_bound, 'the exact tail is tighter than the φ bound');
  });

  it('refuse what the paper makes no claim about', () => {
    assert.throws(() => capeBounds(4, 10, 0.5, 2), /S_C = 2 colluding sites/);
    assert.throws(() => capeBounds(1, 10, 0.5), /at least 2 sites/);
    assert.throws(() => capeBounds(4.5, 10, 0.5), /sites = 4\.5/);
  });
});

describe('the ledger', () => {
  it('round-trips through its JSON and refuses a budget below its spend', () => {
    const ledger = new Ledger('Clinic North', 10, 1e-5);
    assert.deepEqual([ledger.site, ledger.spent, ledger.remaining], ['Clinic North', 0, 10]);
    assert.deepEqual(ledger.budget, { epsilon: 10, delta: 1e-5 });
    const again = Ledger.fromJson(ledger.toJson());
    assert.equal(again.toJson(), ledger.toJson());
    assert.throws(() => new Ledger('x', -1, 1e-5), /-1/);
    assert.throws(() => Ledger.fromJson('{"not": "a ledger"}'));
  });
});

/** Delivers `queue` ({ from, to, kind, payload }) among an aggregator and site roles until quiet. */
function runRoles({ aggregator, aggregatorId, siteFor, clock }) {
  const queue = aggregator.startMessages().map((m) => ({ from: aggregatorId, ...m }));
  // Until the study has ended and its result reached every site.
  for (let guard = 0; guard < 10_000 && (queue.length > 0 || !aggregator.isFinished); guard++) {
    if (queue.length === 0) {
      // The room is quiet: the aggregator's next deadline.
      clock.now = Math.max(clock.now, aggregator.pollTimeout());
      queue.push(...aggregator.handleTimeout(clock.now).map((m) => ({ from: aggregatorId, ...m })));
      continue;
    }
    const m = queue.shift();
    clock.now += 1;
    const targets = m.to === 'all' ? [aggregatorId, ...siteFor.ids].filter((id) => id !== m.from) : [m.to.one];
    for (const to of targets) {
      const out = to === aggregatorId ? aggregator.handle(m.from, m.payload, clock.now) : siteFor.handle(to, m, clock.now);
      queue.push(...out.map((o) => ({ from: to, ...o })));
    }
  }
  assert.ok(aggregator.isFinished, 'the study ended');
  return aggregator.outcome();
}

describe('a private mean through the package', () => {
  it('three MeanSite roles and a MeanAggregator: the CAPE estimate of their pooled mean', () => {
    const N = 300;
    const ids = [2, 3, 4];
    const rows = new Map(ids.map((id) => [id, rowsFor(id, N)]));
    const ledgers = new Map(ids.map((id) => [id, new Ledger(`site ${id}`, 10, 1e-5)]));
    const roles = new Map();
    const clock = { now: 1_700_000_000_000 };
    const aggregator = new MeanAggregator(
      { sites: ids, epsilon: 0.9, delta: 1e-5, valuesPerSite: N, roundTimeoutMs: 1_000 },
      clock.now,
    );
    assert.equal(aggregator.phase, 'inviting');
    assert.deepEqual(aggregator.waitingFor(), ids);
    const siteFor = {
      ids,
      handle(to, m, now) {
        if (!roles.has(to)) roles.set(to, new MeanSite({ me: to, aggregator: 1, rows: rows.get(to) }, ledgers.get(to)));
        return roles.get(to).handle(m.from, m.payload, now);
      },
    };
    const outcome = runRoles({ aggregator, aggregatorId: 1, siteFor, clock });

    assert.equal(outcome.result.status, 'estimated', JSON.stringify(outcome.result));
    assert.deepEqual(outcome.result.survivors, ids);
    const truth = pooledMean(ids.map((id) => rows.get(id)));
    const sd = Math.sqrt(outcome.theory.var_cape);
    assert.ok(sd > 0 && sd < 0.02, `sd ${sd}`);
    assert.ok(Math.abs(outcome.result.cape[0] - truth) < SDS * sd, `CAPE ${outcome.result.cape[0]} vs ${truth} (sd ${sd})`);
    for (const id of ids) {
      const status = roles.get(id).status();
      assert.equal(status.phase, 'done');
      assert.deepEqual(status.end.estimate, outcome.result.cape, 'every site learnt the same estimate');
      assert.ok(Math.abs(status.localMean[0] - pooledMean([rows.get(id)])) < 1e-12);
      // The zero-sum noise of the survivors cancels: Σ e_s = 0 (each site knows only its own).
      assert.equal(status.attempts.length, 1);
      const entries = ledgers.get(id).entries();
      assert.equal(entries.length, 1, 'one release recorded');
      assert.equal(entries[0].study, `mean ${aggregator.study}`);
      assert.ok(ledgers.get(id).spent > 0);
    }
    const zeroSum = ids.reduce((s, id) => s + roles.get(id).status().attempts[0].zeroSumNoise[0], 0);
    assert.ok(Math.abs(zeroSum) < 1e-9, `Σ e_s = ${zeroSum}`);
  });

  it('three Sites and a dashboard over a caller-provided transport; an over-budget site declines', () => {
    const N = 200;
    const clock = { now: 1_700_000_000_000 };
    const room = memoryRoom();
    const reports = new Map(); // site id -> ledger reports received by the dashboard
    let aggregator;
    const dashboard = room.join('dashboard', 'Teacher', (event) => {
      if (event.type !== 'message') return;
      if (event.kind === 'ledger/report') {
        reports.set(event.from, (reports.get(event.from) ?? 0) + 1);
        return;
      }
      for (const m of aggregator?.handle(event.from, event.payload, clock.now) ?? []) dashboard.transport.send(m.to, m.kind, m.payload);
    });
    const sites = [];
    for (const [name, budget] of [['A', 10], ['B', 10], ['C', 10], ['Tight', 0.05]]) {
      const ledger = new Ledger(name, budget, 1e-5);
      let site;
      const member = room.join('site', name, (event) => {
        const step = site.handleEvent(event, clock.now);
        assert.equal(step.refused, null, `${name} refused nothing`);
        if (step.ledgerChanged) member.saved = ledger.toJson();
      });
      site = new Site({ transport: member.transport, rows: rowsFor(member.peer.id, N) }, ledger);
      sites.push({ name, ledger, site, member });
    }
    room.deliver();
    assert.deepEqual(sites.map((s) => s.site.id), [2, 3, 4, 5]);
    for (const s of sites) assert.equal(reports.get(s.site.id), 1, `${s.name} reported its ledger on joining`);

    aggregator = new MeanAggregator(
      { sites: sites.map((s) => s.site.id), epsilon: 0.9, delta: 1e-5, valuesPerSite: N, roundTimeoutMs: 1_000 },
      clock.now,
    );
    for (const m of aggregator.startMessages()) dashboard.transport.send(m.to, m.kind, m.payload);
    for (let guard = 0; guard < 1_000 && !aggregator.isFinished; guard++) {
      clock.now += 1;
      if (room.deliver() === 0) {
        clock.now = Math.max(clock.now, aggregator.pollTimeout());
        for (const m of aggregator.handleTimeout(clock.now)) dashboard.transport.send(m.to, m.kind, m.payload);
      }
    }
    room.deliver();
    const outcome = aggregator.outcome();
    assert.equal(outcome.result.status, 'estimated', JSON.stringify(outcome.result));
    const [tight, ...released] = [sites[3], ...sites.slice(0, 3)];
    assert.deepEqual(outcome.result.survivors, released.map((s) => s.site.id));
    assert.equal(outcome.declined.length, 1);
    assert.equal(outcome.declined[0].site, tight.site.id);
    assert.match(JSON.stringify(outcome.declined[0].reason), /budget|exceed/i);
    assert.equal(tight.site.status().phase, 'declined');
    assert.equal(tight.ledger.entries().length, 0, 'the declining site recorded nothing');
    assert.equal(reports.get(tight.site.id), 1);
    const truth = pooledMean(released.map((s) => rowsFor(s.site.id, N)));
    const sd = Math.sqrt(outcome.theory.var_cape);
    assert.ok(Math.abs(outcome.result.cape[0] - truth) < SDS * sd, `CAPE ${outcome.result.cape[0]} vs ${truth} (sd ${sd})`);
    for (const s of released) {
      assert.equal(s.site.status().end.kind, 'done');
      assert.equal(s.ledger.entries().length, 1);
      assert.equal(reports.get(s.site.id), 2, `${s.name}: a report on joining and one after its release`);
      assert.equal(Ledger.fromJson(s.member.saved).toJson(), s.ledger.toJson(), 'the saved ledger is the ledger');
    }
  });

  it('a Site takes studies only from a dashboard and names what it refuses', () => {
    const sent = [];
    const ledger = new Ledger('x', 10, 1e-5);
    const site = new Site({ transport: { send: (to, kind, payload) => sent.push({ to, kind, payload }) }, rows: [[0.5]] }, ledger);
    const peer = (id, role) => ({ id, role, name: `p${id}` });
    site.handleEvent({ type: 'connected', room: 'R', you: peer(3, 'site'), peers: [peer(1, 'dashboard'), peer(2, 'site')], resume: 't' }, 1);
    assert.equal(sent.length, 1);
    assert.deepEqual([sent[0].to, sent[0].kind], [{ one: 1 }, 'ledger/report']);
    const start = new MeanAggregator({ sites: [2, 3], epsilon: 0.5, delta: 1e-5, valuesPerSite: 1 }, 1).startMessages()[0];
    const fromSite = site.handleEvent({ type: 'message', from: 2, kind: start.kind, payload: start.payload }, 2);
    assert.match(fromSite.refused, /participant 2, who is not a dashboard/);
    const relay = site.handleEvent({ type: 'refused', code: 'rate_limited', message: 'slow down' }, 3);
    assert.equal(relay.refused, 'the relay refused a frame (rate_limited): slow down');
    assert.throws(() => site.handleEvent({ type: "message", from: 1.5, kind: "mean/start", payload: new Uint8Array() }, 4), /^Error: RoomEvent: invalid type: floating point `1\.5`, expected u32$/);
    assert.throws(() => site.handleEvent({ type: 'connected' }, 5), /RoomEvent/);
    assert.throws(() => site.handleEvent({ type: 'peer_left', peer: peer(1, 'dashboard') }, -1), /nowMs = -1/);
    assert.throws(() => new Site({ rows: [] }, ledger), /transport must be an object with a send/);
    assert.equal(sent.length, 1, 'nothing else was sent');
  });
});

describe("the relay's frames", () => {
  it('are the wire format both ways', () => {
    assert.equal(joinFrame({ room: 'K7QX2M', name: 'Clinic North' }), '{"type":"join","v":1,"room":"K7QX2M","role":"site","name":"Clinic North"}');
    assert.equal(sendFrame({ one: 3 }, 'mean/accept', new Uint8Array([1, 2, 3])), '{"type":"send","v":1,"to":{"one":3},"kind":"mean/accept","payload":"AQID"}');
    const message = readFrame('{"type":"envelope","v":1,"room":"K7QX2M","from":1,"to":"all","kind":"mean/start","payload":"AQID"}');
    assert.deepEqual({ ...message, payload: [...message.payload] }, { type: 'message', from: 1, kind: 'mean/start', payload: [1, 2, 3] });
    assert.ok(message.payload instanceof Uint8Array);
    const left = readFrame('{"type":"presence","v":1,"event":"left","peer":{"id":4,"role":"site","name":"D"}}');
    assert.deepEqual(left, { type: 'peer_left', peer: { id: 4, role: 'site', name: 'D' } });
    assert.throws(() => readFrame('{"type":"presence","v":2,"event":"left","peer":{"id":4,"role":"site","name":"D"}}'), /wire version 2/);
    assert.throws(() => joinFrame({ room: 'K7QX2M' }), /JoinOptions: missing field `name`/);
  });
});
