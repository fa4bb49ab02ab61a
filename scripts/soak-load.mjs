// The soak test's load and sampler (scripts/soak.sh starts the server and runs this).
//   node scripts/soak-load.mjs URL PID SECONDS CSV
// Prompts vary over a fixed set (the tokenizer's word cache and the prefix cache fill during
// warm-up; growth after it is a leak). Runs mixed traffic for SECONDS: streamed and whole completions and chat, streams cancelled
// mid-way, bad requests (malformed JSON, unknown model, wrong method, oversized max_tokens),
// pipelined and kept-alive raw requests, and a slow client cut off by --header-timeout. Every
// 2 s it samples the server's RSS, open descriptors, threads (/proc/PID) and KV blocks in use
// (/metrics) into CSV. At the end, with the load stopped and idle connections expired, it checks
// (exit 1 on a failure):
//   RSS:     the highest sample after warm-up (the first 30% of the run) is at most 15% + 8 MiB
//            above the highest sample during warm-up;
//   threads: never above the count before the load (every thread is started up front);
//   fds:     back to the count before the load, +2;
//   KV:      0 blocks in use; every request answered with the status it should get.
import * as fs from 'node:fs';
import * as net from 'node:net';

const [url, pid, secondsArg, csvPath] = process.argv.slice(2);
const seconds = Number(secondsArg);
if (!url || !pid || !(seconds > 0) || !csvPath) {
  console.error('usage: node scripts/soak-load.mjs URL PID SECONDS CSV');
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const host = new URL(url).host;

function proc() {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (k) => Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(status)[1]);
  return { rss_kib: field('VmRSS'), threads: field('Threads'), fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}
async function kvUsed() {
  const m = await (await fetch(url + '/metrics')).text();
  return Number(/^tessera_kv_blocks_used (\S+)/m.exec(m)[1]);
}

const model = JSON.parse(await (await fetch(url + '/v1/models')).text()).data[0].id;
const wrong = [];  // requests that got another answer than they should
const counts = {};
function expect(kind, status, want) {
  counts[kind] = (counts[kind] ?? 0) + 1;
  if (status !== want) wrong.push(`${kind}: ${status}, expected ${want}`);
}
async function post(path, body, signal) {
  return fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal });
}

// One kind of request each; the clients pick them in turn.
const kinds = [
  async function completion(i) {
    const r = await post('/v1/completions', JSON.stringify({ model, prompt: `Once upon a time ${i % 256}`, max_tokens: 24 }));
    await r.text();
    expect('completion', r.status, 200);
  },
  async function chatStream(i) {
    const r = await post('/v1/chat/completions', JSON.stringify({
      model, stream: true, max_tokens: 32, messages: [{ role: 'user', content: `Tell me about ${i % 256}` }] }));
    const text = await r.text();
    expect('chat stream', r.status, 200);
    if (!text.includes('data: [DONE]')) wrong.push('chat stream: no [DONE]');
  },
  async function cancelledStream(i) {
    const ac = new AbortController();
    try {
      const r = await post('/v1/completions', JSON.stringify({ model, prompt: `A long story ${i % 256}`, max_tokens: 200, stream: true, ignore_eos: true }), ac.signal);
      expect('cancelled stream', r.status, 200);
      const reader = r.body.getReader();
      await reader.read();  // the first chunk, then leave
      ac.abort();
    } catch (e) {
      if (e.name !== 'AbortError') wrong.push(`cancelled stream: ${e}`);
    }
  },
  async function badRequests(i) {
    const cases = [
      ['/v1/completions', '{"model": "x", "prompt": ', 400],
      ['/v1/completions', JSON.stringify({ model: 'no-such-model', prompt: 'x' }), 404],
      ['/v1/completions', JSON.stringify({ model, prompt: 'x', max_tokens: 1e9 }), 400],
      ['/v1/chat/completions', JSON.stringify({ model, messages: 'not a list' }), 400],
    ];
    const [path, body, want] = cases[i % cases.length];
    const r = await post(path, body);
    await r.text();
    expect('bad request', r.status, want);
    const g = await fetch(url + '/v1/completions');
    await g.text();
    expect('wrong method', g.status, 405);
  },
  async function pipelined() {
    const u = new URL(url);
    const sock = net.connect(Number(u.port), u.hostname);
    let buf = '';
    sock.on('data', (d) => { buf += d; });
    sock.on('error', () => {});
    const body = JSON.stringify({ model, prompt: 'pipe', max_tokens: 4 });
    sock.write(`GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
               `POST /v1/completions HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
               `GET /v1/models HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    await new Promise((r) => { sock.on('close', r); setTimeout(r, 20_000); });
    sock.destroy();
    const statuses = [...buf.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    expect('pipelined', statuses.join(','), '200,200,200');
  },
];

async function slowClient() {  // trickles headers until --header-timeout answers 408
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  let buf = '', closed = false;
  sock.on('data', (d) => { buf += d; });
  sock.on('error', () => {});
  sock.on('close', () => { closed = true; });
  for (let i = 0; !closed && i < 60; i++) {
    sock.write(i === 0 ? 'GET /health HTTP/1.1\r\nX-Slow: ' : 'a');
    await sleep(500);
  }
  sock.destroy();
  expect('slow client', Number(/^HTTP\/1\.1 (\d+)/.exec(buf)?.[1]), 408);
}

const before = proc();
const samples = [];
const t0 = Date.now();
const end = t0 + seconds * 1000;
const csv = fs.createWriteStream(csvPath);
csv.write('t_s,rss_kib,fds,threads,kv_blocks_used\n');
const sampler = (async () => {
  while (Date.now() < end) {
    const s = { t: (Date.now() - t0) / 1000, ...proc(), kv: await kvUsed() };
    samples.push(s);
    csv.write(`${s.t.toFixed(1)},${s.rss_kib},${s.fds},${s.threads},${s.kv}\n`);
    await sleep(2000);
  }
})();
const clients = Array.from({ length: 6 }, async (_, k) => {
  for (let i = k; Date.now() < end; i++) {
    try { await kinds[i % kinds.length](i); } catch (e) { wrong.push(`${kinds[i % kinds.length].name}: ${e}`); }
  }
});
const slow = (async () => { while (Date.now() < end) await slowClient(); })();
await Promise.all([sampler, slow, ...clients]);
csv.end();

// Quiet: kept-alive connections expire (--keep-alive 2 in soak.sh), cancelled sequences free.
await sleep(3500);
const after = proc();
const kv = await kvUsed();
const warm = samples.filter((s) => s.t < seconds * 0.3);
const rest = samples.filter((s) => s.t >= seconds * 0.3);
const warmRss = Math.max(...warm.map((s) => s.rss_kib));
const restRss = Math.max(...rest.map((s) => s.rss_kib));
const maxThreads = Math.max(...samples.map((s) => s.threads));
const failures = [];
if (restRss > warmRss * 1.15 + 8192) failures.push(`RSS grew: ${warmRss} KiB in warm-up, ${restRss} KiB after`);
if (maxThreads > before.threads) failures.push(`threads grew: ${before.threads} before the load, ${maxThreads} during`);
if (after.fds > before.fds + 2) failures.push(`descriptors: ${before.fds} before the load, ${after.fds} after`);
if (kv !== 0) failures.push(`${kv} KV blocks still in use after the load`);
if (wrong.length) failures.push(`${wrong.length} wrong answers, e.g. ${wrong.slice(0, 5).join('; ')}`);
const total = Object.values(counts).reduce((a, b) => a + b, 0);
console.log(`soak: ${seconds} s, ${total} requests (${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')})`);
console.log(`soak: RSS ${before.rss_kib} KiB before, max ${warmRss} in warm-up, max ${restRss} after; ` +
            `fds ${before.fds} -> ${after.fds}; threads ${before.threads}, max ${maxThreads}; KV blocks in use at the end ${kv}`);
for (const f of failures) console.log(`soak: FAIL: ${f}`);
process.exit(failures.length ? 1 : 0);
