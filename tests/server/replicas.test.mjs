// Three replicas behind HAProxy (deploy/haproxy.cfg, on loopback): one gets SIGTERM mid-load.
// It drains (/health 503 first, requests still served for --drain-delay, then in-flight ones
// finish), so no request fails: those it refuses while draining, or that find it gone, HAProxy
// sends to another replica. The other replicas' throughput does not drop. Requests that name a
// session (X-Session-Id) all go to one replica.
import { test, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { spawn, spawnSync } from 'node:child_process';
import { MODEL, startServer } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const procs = [];
after(() => { for (const p of procs) p.kill(); });

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

async function startHaproxy(replicas) {
  assert.equal(spawnSync('haproxy', ['-v']).status, 0, 'haproxy is missing (scripts/setup.sh installs it)');
  const port = await freePort();
  const env = { ...process.env, TESSERA_LB_BIND: `127.0.0.1:${port}` };
  replicas.forEach((r, i) => { env[`TESSERA_REPLICA_${i + 1}`] = new URL(r.url).host; });
  const proc = spawn('haproxy', ['-db', '-f', 'deploy/haproxy.cfg'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  procs.push({ kill: () => { if (proc.exitCode === null) proc.kill('SIGKILL'); } });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {  // up once every replica passed its checks (rise 2 x 500 ms)
    try {
      const seen = new Set();
      for (let k = 0; k < 6; k++) {
        const r = await fetch(url + '/v1/models');
        await r.text();
        if (r.ok) seen.add(r.headers.get('x-served-by'));
      }
      if (seen.size === 3) return url;
    } catch {}
    if (i > 100) throw new Error(`haproxy did not come up: ${err}`);
    await sleep(100);
  }
}

test('three replicas behind HAProxy: one drained mid-load, no request fails', async () => {
  const replicas = [];
  for (let i = 0; i < 3; i++) {
    const r = await startServer(['--drain-delay', '2', '--max-client-connections', '0']);
    procs.push(r);
    replicas.push(r);
  }
  const lb = await startHaproxy(replicas);

  // Affinity: one session, one replica.
  const served = new Set();
  for (let i = 0; i < 6; i++) {
    const r = await fetch(lb + '/v1/models', { headers: { 'x-session-id': 'conversation-42' } });
    await r.text();
    served.add(r.headers.get('x-served-by'));
  }
  assert.equal(served.size, 1, `one session went to ${[...served]}`);

  // Load: 6 clients, each a request after the other, streamed and not, for 14 s; r2 gets
  // SIGTERM at 5 s.
  const t0 = Date.now();
  const results = [];
  let killedAt = 0;
  const client = async (k) => {
    for (let i = 0; Date.now() - t0 < 14_000; i++) {
      const stream = (i + k) % 2 === 0;
      const start = Date.now();
      const rec = { start, ok: false };
      try {
        const r = await fetch(lb + '/v1/completions', {
          method: 'POST', headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(30_000),
          body: JSON.stringify({ model: MODEL, prompt: `request ${k}.${i}`, max_tokens: 8, stream, ignore_eos: true }) });
        const text = await r.text();
        rec.status = r.status;
        rec.by = r.headers.get('x-served-by');
        rec.ok = r.status === 200 && (stream ? text.includes('data: [DONE]') : JSON.parse(text).choices.length === 1);
        if (!rec.ok) rec.error = text.slice(0, 300);
      } catch (e) {
        rec.error = String(e);
      }
      rec.end = Date.now();
      results.push(rec);
    }
  };
  const killer = (async () => {
    await sleep(5000);
    killedAt = Date.now();
    replicas[1].proc.kill('SIGTERM');
  })();
  await Promise.all([killer, ...Array.from({ length: 6 }, (_, k) => client(k))]);
  assert.equal(await replicas[1].exit(), 0, 'the drained replica exits 0');

  // No failures, except requests in flight on r2 when it was killed (there should be none:
  // the drain lets them finish).
  const failed = results.filter((r) => !r.ok);
  const excused = failed.filter((r) => r.by === 'r2' && r.start <= killedAt && r.end >= killedAt);
  assert.deepEqual(failed.filter((r) => !excused.includes(r)), [], 'failed requests');
  assert.ok(results.length > 30, `only ${results.length} requests in 14 s`);

  // r2 gets no new work once its drain (2 s) is over.
  const late = results.filter((r) => r.by === 'r2' && r.start > killedAt + 2500);
  assert.deepEqual(late, [], 'requests sent to r2 after its drain');

  // The others' throughput: requests finished per second, before the kill vs after it (from
  // 3 s after, when HAProxy has moved r2's share to them).
  const rate = (from, to) => results.filter((r) => r.ok && r.by !== 'r2' && r.end >= from && r.end < to).length / ((to - from) / 1000);
  const before = rate(t0 + 1000, killedAt);
  const afterRate = rate(killedAt + 3000, t0 + 14_000);
  assert.ok(afterRate >= 0.7 * before, `r1 + r3: ${before.toFixed(1)} req/s before, ${afterRate.toFixed(1)} after`);
  console.log(`# ${results.length} requests, ${failed.length} failed; r1 + r3: ${before.toFixed(1)} req/s before the kill, ${afterRate.toFixed(1)} after`);
});
