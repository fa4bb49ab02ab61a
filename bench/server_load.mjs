#!/usr/bin/env node
// Load test for `tessera serve` with the official OpenAI client: many concurrent streaming
// requests (completions and chat), a random subset aborted mid-stream by the client. Reports
// failed requests (cancels are not failures), throughput, TTFT and total latency percentiles,
// and the KV blocks still in use once everything has finished (read from /metrics; must be 0).
//
//   node bench/server_load.mjs --model DIR [--context 512] [server options...]   (starts a server)
//   node bench/server_load.mjs --url http://127.0.0.1:8080 [--api-key KEY]       (uses one)
//   phases: --phase1 256 (concurrent streams, no cancels), then --phase2 2000 requests with
//   --concurrency 128 and --cancel 0.25; --max-tokens 6. Exit status 1 on any failure or leak.
// The CI test (tests/server/load.test.mjs) imports runPhase with smaller numbers.
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';

const PROMPTS = ['The quick brown fox', 'Once upon a time', 'In a hole in the ground there lived',
                 'Write a haiku about the sea', 'List three prime numbers', 'What is the capital of France?'];

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

// A deterministic generator so that runs are repeatable (cancel choices, prompts).
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

async function oneRequest(openai, model, i, { maxTokens, cancelAfter }) {
  const t0 = performance.now();
  const chat = i % 2 === 1;
  const controller = new AbortController();
  const params = { model, max_tokens: maxTokens, temperature: 1, seed: i, stream: true };
  const prompt = PROMPTS[i % PROMPTS.length];
  let ttft = null, chunks = 0, finish = null, text = '';
  try {
    const stream = chat
      ? await openai.chat.completions.create({ ...params, messages: [{ role: 'user', content: prompt }] },
                                             { signal: controller.signal })
      : await openai.completions.create({ ...params, prompt }, { signal: controller.signal });
    for await (const c of stream) {
      for (const ch of c.choices) {
        const piece = chat ? ch.delta?.content : ch.text;
        if (piece) {
          text += piece;
          if (ttft === null) ttft = performance.now() - t0;
          ++chunks;
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
      if (cancelAfter !== null && chunks >= cancelAfter) {
        controller.abort();
        return { kind: 'cancelled', ttft, total: performance.now() - t0 };
      }
    }
    if (!finish) return { kind: 'failed', error: 'stream ended without a finish_reason' };
    if (finish !== 'stop' && finish !== 'length') return { kind: 'failed', error: `finish_reason ${finish}` };
    return { kind: 'ok', ttft, total: performance.now() - t0 };
  } catch (e) {
    if (controller.signal.aborted) return { kind: 'cancelled', ttft, total: performance.now() - t0 };
    return { kind: 'failed', error: String(e?.message ?? e) };
  }
}

// Prometheus text -> {"name{labels}": value}.
export async function readMetrics(base, key) {
  const res = await fetch(`${base}/metrics`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const out = {};
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

// Waits (up to timeoutMs) for the scheduler to be idle: nothing running or waiting and no KV
// block referenced. Returns the last metrics read.
export async function waitIdle(base, key, timeoutMs = 30_000) {
  const t0 = Date.now();
  for (;;) {
    const m = await readMetrics(base, key);
    const idle = m.tessera_kv_blocks_used === 0 && m.tessera_running_sequences === 0 && m.tessera_queue_depth === 0 &&
                 m.tessera_server_queued_sequences === 0;
    if (idle || Date.now() - t0 > timeoutMs) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
}

// requests streaming requests, at most `concurrency` at once; a `cancel` fraction of them is
// aborted after a random number of text chunks, at most `cancelAfterMax` (default: any chunk
// before the last).
export async function runPhase({ base, key, model, requests, concurrency, cancel = 0, maxTokens = 6, seed = 1,
                                 cancelAfterMax = maxTokens - 1 }) {
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key ?? 'none', maxRetries: 0, timeout: 600_000 });
  const rand = rng(seed);
  const plan = Array.from({ length: requests }, () =>
    rand() < cancel ? 1 + Math.floor(rand() * Math.max(1, cancelAfterMax)) : null);
  const results = new Array(requests);
  let next = 0;
  const m0 = await readMetrics(base, key);
  const t0 = performance.now();
  async function worker() {
    while (next < requests) {
      const i = next++;
      results[i] = await oneRequest(openai, model, i, { maxTokens, cancelAfter: plan[i] });
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
  const wallS = (performance.now() - t0) / 1e3;
  const ok = results.filter((r) => r.kind === 'ok');
  const ttft = results.filter((r) => r.ttft !== null && r.ttft !== undefined).map((r) => r.ttft).sort((a, b) => a - b);
  const total = ok.map((r) => r.total).sort((a, b) => a - b);
  const m = await waitIdle(base, key);
  // Tokens the server generated in the phase (cancelled requests' included), from /metrics.
  const generated = m.tessera_generation_tokens_total - m0.tessera_generation_tokens_total;
  return {
    requests, concurrency, maxTokens,
    ok: ok.length,
    cancelled: results.filter((r) => r.kind === 'cancelled').length,
    failed: results.filter((r) => r.kind === 'failed').length,
    failures: results.filter((r) => r.kind === 'failed').slice(0, 5).map((r) => r.error),
    wallS,
    requestsPerS: requests / wallS,
    generatedTokens: generated,
    generatedTokensPerS: generated / wallS,
    ttftMs: { p50: percentile(ttft, 50), p90: percentile(ttft, 90), p99: percentile(ttft, 99) },
    totalMs: { p50: percentile(total, 50), p90: percentile(total, 90), p99: percentile(total, 99) },
    kvBlocksUsed: m.tessera_kv_blocks_used,
    kvBlocksTotal: m.tessera_kv_blocks_total,
    running: m.tessera_running_sequences,
  };
}

function parseArgs(argv) {
  const a = { phase1: 256, phase2: 2000, concurrency: 128, cancel: 0.25, maxTokens: 6, context: 512, serverArgs: [] };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i], v = argv[i + 1];
    const take = () => { ++i; return v; };
    if (k === '--url') a.url = take();
    else if (k === '--api-key') a.key = take();
    else if (k === '--model') a.model = take();
    else if (k === '--context') a.context = Number(take());
    else if (k === '--phase1') a.phase1 = Number(take());
    else if (k === '--phase2') a.phase2 = Number(take());
    else if (k === '--concurrency') a.concurrency = Number(take());
    else if (k === '--cancel') a.cancel = Number(take());
    else if (k === '--max-tokens') a.maxTokens = Number(take());
    else if (k === '--bin') a.bin = take();
    else a.serverArgs.push(k);
  }
  if (!a.url && !a.model) throw new Error('give --model DIR (starts a server) or --url URL');
  return a;
}

async function startServer(a) {
  const bin = a.bin ?? './build/tessera';
  const proc = spawn(bin, ['serve', '--model', a.model, '--port', '0', '--context', String(a.context), ...a.serverArgs],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
  return { url, proc };
}

function report(name, r) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(0) : '-');
  console.log(`${name}: ${r.requests} requests (${r.concurrency} at once, max_tokens ${r.maxTokens}): ` +
              `${r.ok} ok, ${r.cancelled} cancelled, ${r.failed} failed in ${r.wallS.toFixed(1)} s; ` +
              `${r.requestsPerS.toFixed(2)} req/s, ${r.generatedTokens} tokens generated (${r.generatedTokensPerS.toFixed(1)} tok/s); ` +
              `TTFT p50/p90/p99 ${f(r.ttftMs.p50)}/${f(r.ttftMs.p90)}/${f(r.ttftMs.p99)} ms; ` +
              `total p50/p90/p99 ${f(r.totalMs.p50)}/${f(r.totalMs.p90)}/${f(r.totalMs.p99)} ms; ` +
              `KV blocks in use after: ${r.kvBlocksUsed} of ${r.kvBlocksTotal}`);
  for (const e of r.failures) console.log(`  failure: ${e}`);
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let server = null;
  if (!a.url) server = await startServer(a);
  const base = a.url ?? server.url;
  try {
    const models = await (await fetch(`${base}/v1/models`, { headers: a.key ? { authorization: `Bearer ${a.key}` } : {} })).json();
    const model = models.data[0].id;
    const phases = [];
    if (a.phase1 > 0) {
      const r = await runPhase({ base, key: a.key, model, requests: a.phase1, concurrency: a.phase1, cancel: 0,
                                 maxTokens: a.maxTokens, seed: 1 });
      report(`phase 1 (${a.phase1} concurrent streams)`, r);
      phases.push(r);
    }
    if (a.phase2 > 0) {
      const r = await runPhase({ base, key: a.key, model, requests: a.phase2, concurrency: a.concurrency,
                                 cancel: a.cancel, maxTokens: a.maxTokens, seed: 2 });
      report(`phase 2 (${a.phase2} requests, ${Math.round(a.cancel * 100)}% cancelled mid-stream)`, r);
      phases.push(r);
    }
    console.log(JSON.stringify({ phases }, null, 1));
    const bad = phases.some((r) => r.failed > 0 || r.kvBlocksUsed !== 0 || r.running !== 0);
    process.exitCode = bad ? 1 : 0;
  } finally {
    if (server) server.proc.kill('SIGTERM');
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e) => { console.error(e); process.exit(1); });
}
