// No client can starve the server (issue #29): the connection gate's limits, each on a server of
// the test's own. Slow clients (headers or body trickled a byte at a time) are cut off by their
// deadlines with 408; hundreds of them hold no thread, so /health answers meanwhile; pipelined
// requests on one connection are all answered, in order; the per-client cap makes room by closing
// the client's oldest idle connection, and refuses with 429 when it has none.
import { test, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { MODEL, startServer } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const servers = [];
after(() => { for (const s of servers) s.kill(); });

async function server(args) {
  const s = await startServer(args);
  servers.push(s);
  return s;
}

// A raw connection: everything received is kept; `closed` resolves when the server closes it.
async function connect(url) {
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  const c = { sock, buf: Buffer.alloc(0), closedAt: 0 };
  sock.on('data', (d) => { c.buf = Buffer.concat([c.buf, d]); });
  sock.on('error', () => {});
  c.closed = new Promise((resolve) => sock.once('close', () => { c.closedAt = Date.now(); resolve(); }));
  return c;
}

// The Content-Length responses in buf, in order: [{status, headers, body}].
function responses(buf) {
  const out = [];
  for (;;) {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return out;
    const head = buf.subarray(0, end).toString();
    const len = Number((/content-length:\s*(\d+)/i.exec(head) ?? [0, 0])[1]);
    out.push({ status: Number(head.split(' ')[1]), head, body: buf.subarray(end + 4, end + 4 + len).toString() });
    buf = buf.subarray(end + 4 + len);
  }
}

// GET path with a deadline; resolves to {status, ms} or rejects on timeout.
async function timedGet(url, path, ms) {
  const t0 = Date.now();
  const r = await fetch(url + path, { signal: AbortSignal.timeout(ms) });
  await r.text();
  return { status: r.status, ms: Date.now() - t0 };
}

test('connection limits', async (t) => {
  // Two workers only: the probes' lane must answer while both are held.
  const s = await server(['--threads', '2', '--header-timeout', '1', '--body-timeout', '2',
                          '--max-client-connections', '0']);
  const host = new URL(s.url).host;
  const completion = JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: 2 });

  await t.test('pipelined requests on one connection are all answered, in order', async () => {
    const c = await connect(s.url);
    c.sock.write(`GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
                 `POST /v1/completions HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
                 `Content-Length: ${Buffer.byteLength(completion)}\r\n\r\n${completion}` +
                 `GET /v1/models HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
                 `GET /nope HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    await Promise.race([c.closed, sleep(20_000)]);
    const rs = responses(c.buf);
    assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 404], c.buf.toString());
    assert.equal(JSON.parse(rs[1].body).object, 'text_completion');
    assert.equal(JSON.parse(rs[2].body).object, 'list');
    assert.ok(c.closedAt > 0, 'the server closes after the request that asked it to');
  });

  await t.test('a client trickling its headers is cut off by --header-timeout with 408', async () => {
    const c = await connect(s.url);
    const t0 = Date.now();
    const line = `GET /health HTTP/1.1\r\nHost: ${host}\r\nX-Slow: ${'a'.repeat(40)}`;
    for (let i = 0; i < line.length && !c.closedAt; i++) {  // one byte every 100 ms: 4+ s in all
      c.sock.write(line[i]);
      await sleep(100);
    }
    await Promise.race([c.closed, sleep(5000)]);
    assert.ok(c.closedAt > 0, 'still open after 5 s');
    const ms = c.closedAt - t0;
    assert.ok(ms >= 900 && ms < 2500, `closed after ${ms} ms; --header-timeout is 1 s`);
    const [r] = responses(c.buf);
    assert.equal(r?.status, 408, c.buf.toString());
    assert.equal(JSON.parse(r.body).error.code, 'request_timeout');
  });

  await t.test('a client trickling its body is cut off by --body-timeout with 408', async () => {
    const c = await connect(s.url);
    const t0 = Date.now();
    c.sock.write(`POST /v1/completions HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
                 `Content-Length: ${Buffer.byteLength(completion)}\r\n\r\n`);
    for (let i = 0; i < completion.length && !c.closedAt; i++) {
      c.sock.write(completion[i]);
      await sleep(200);
    }
    await Promise.race([c.closed, sleep(5000)]);
    const ms = c.closedAt - t0;
    assert.ok(c.closedAt > 0 && ms >= 1900 && ms < 4000, `closed after ${ms} ms; --body-timeout is 2 s`);
    const [r] = responses(c.buf);
    assert.equal(r?.status, 408, c.buf.toString());
    assert.match(JSON.parse(r.body).error.message, /--body-timeout/);
  });

  await t.test('/health and /metrics answer while every worker is held by a slow body', async () => {
    const slow = [];
    for (let i = 0; i < 2; i++) {  // --threads 2: both workers wait for these bodies (2 s)
      const c = await connect(s.url);
      c.sock.write(`POST /v1/completions HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 100\r\n\r\n{`);
      slow.push(c);
    }
    await sleep(200);
    for (const path of ['/health', '/metrics']) {
      const r = await timedGet(s.url, path, 1000);
      assert.equal(r.status, 200);
    }
    // Other work waits for a worker (here until the slow bodies time out), and is then answered.
    const r = await timedGet(s.url, '/v1/models', 10_000);
    assert.equal(r.status, 200);
    assert.ok(r.ms >= 1000, `/v1/models answered in ${r.ms} ms while both workers were held`);
    await Promise.all(slow.map((c) => c.closed));
  });
});

test('600 slow connections do not stop /health answering', async () => {
  const s = await server(['--threads', '4', '--max-client-connections', '0']);
  const slow = [];
  for (let i = 0; i < 600; i++) slow.push(await connect(s.url));
  let stop = false;
  const trickle = (async () => {  // each sends one more header byte every 500 ms
    for (let i = 0; !stop; i++) {
      for (const c of slow) c.sock.write(i === 0 ? 'GET /health HTTP/1.1\r\nX: ' : 'a');
      await sleep(500);
    }
  })();
  try {
    await sleep(500);
    for (let i = 0; i < 5; i++) {
      const r = await timedGet(s.url, '/health', 2000);
      assert.equal(r.status, 200);
    }
    const m = await (await fetch(s.url + '/metrics', { signal: AbortSignal.timeout(2000) })).text();
    const waiting = Number(/^tessera_connections_waiting (\d+)/m.exec(m)?.[1]);
    assert.ok(waiting >= 600, `tessera_connections_waiting ${waiting}`);
    // Work other than probes is answered too: the slow connections hold no worker.
    const r = await fetch(s.url + '/v1/completions', {
      method: 'POST', signal: AbortSignal.timeout(10_000), headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: 2 }) });
    assert.equal(r.status, 200);
  } finally {
    stop = true;
    await trickle;
    for (const c of slow) c.sock.destroy();
  }
});

test('the per-client cap closes the client\'s oldest idle connection, or refuses with 429', async () => {
  const s = await server(['--max-client-connections', '3', '--body-timeout', '3']);
  const idle = [];
  for (let i = 0; i < 3; i++) { idle.push(await connect(s.url)); await sleep(20); }
  await sleep(100);
  // A fourth connection gets in: the oldest idle one is closed to make room.
  const r = await timedGet(s.url, '/health', 2000);
  assert.equal(r.status, 200);
  await Promise.race([idle[0].closed, sleep(1000)]);
  assert.ok(idle[0].closedAt > 0, 'the oldest idle connection is still open');
  for (const c of idle) c.sock.destroy();
  await sleep(200);

  // Three connections each in a request (bodies that never finish): none can make room.
  const busy = [];
  for (let i = 0; i < 3; i++) {
    const c = await connect(s.url);
    c.sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{`);
    busy.push(c);
  }
  await sleep(300);
  const c = await connect(s.url);
  c.sock.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  await Promise.race([c.closed, sleep(2000)]);
  const [resp] = responses(c.buf);
  assert.equal(resp?.status, 429, c.buf.toString());
  assert.equal(JSON.parse(resp.body).error.code, 'too_many_connections');
  assert.match(JSON.parse(resp.body).error.message, /--max-client-connections 3/);
  for (const b of busy) b.sock.destroy();
  const m = await (await fetch(s.url + '/metrics')).text();
  assert.match(m, /tessera_connections_closed_total\{reason="client_cap"\} 1/);
  assert.match(m, /tessera_connections_closed_total\{reason="evicted"\} [1-9]/);
});
