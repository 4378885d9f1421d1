// Test helpers for the package's node tests: an in-memory room that routes like the relay (a
// broadcast skips its sender; an unknown recipient is refused), and sites' rows with a known mean.

/**
 * A room in one process. `join(role, name, onEvent)` returns `{ peer, transport }`: the
 * transport is the `Transport` a `Site` takes; events wait in a queue until `deliver()` hands
 * them out (a send never calls back into its sender), which returns how many it delivered.
 */
export function memoryRoom() {
  const members = new Map();
  const queue = [];
  let next = 1;
  return {
    join(role, name, onEvent) {
      const peer = { id: next++, role, name };
      const others = [...members.values()].map((m) => m.peer);
      members.set(peer.id, { peer, onEvent });
      // The relay's welcome lists everyone, the newcomer too.
      queue.push({ to: peer.id, event: { type: 'connected', room: 'MEMORY', you: peer, peers: [...others, peer], resume: `token-${peer.id}` } });
      for (const other of others) queue.push({ to: other.id, event: { type: 'peer_joined', peer } });
      const transport = {
        send(to, kind, payload) {
          const targets = to === 'all' ? [...members.keys()].filter((id) => id !== peer.id) : [to.one];
          for (const id of targets) {
            if (!members.has(id)) throw new Error(`participant ${id} is not in the room`);
            queue.push({ to: id, event: { type: 'message', from: peer.id, kind, payload } });
          }
        },
      };
      return { peer, transport };
    },
    deliver() {
      let delivered = 0;
      while (queue.length > 0) {
        const { to, event } = queue.shift();
        members.get(to)?.onEvent(event);
        delivered += 1;
      }
      return delivered;
    },
  };
}

/** `n` rows of one value in [0, 1] for site `id`: a fixed pseudo-random sequence (an LCG). */
export function rowsFor(id, n) {
  let state = (id * 2654435761) >>> 0;
  const rows = [];
  for (let i = 0; i < n; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    rows.push([state / 2 ** 32]);
  }
  return rows;
}

/** The mean of the first value over every row of every site (equal N_s: the mean of means). */
export function pooledMean(sites) {
  const all = sites.flat();
  return all.reduce((sum, row) => sum + row[0], 0) / all.length;
}
