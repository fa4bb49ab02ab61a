// Shared pieces of the server tests: the server run.sh started (TESSERA_URL, TESSERA_API_KEY,
// TESSERA_MODEL_DIR, TESSERA_CONTEXT), the official OpenAI client pointed at it, raw HTTP for
// the cases a client cannot send, the CLI, and servers of a test's own.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import * as assert from 'node:assert/strict';
import OpenAI from 'openai';

export const BASE = process.env.TESSERA_URL;
export const KEY = process.env.TESSERA_API_KEY;
export const MODEL_DIR = process.env.TESSERA_MODEL_DIR;
export const MODEL = process.env.TESSERA_MODEL_NAME;
export const CONTEXT = Number(process.env.TESSERA_CONTEXT);
export const BIN = process.env.TESSERA_BIN ?? './build/tessera';
if (!BASE || !KEY || !MODEL_DIR || !MODEL || !CONTEXT) {
  throw new Error('run through tests/server/run.sh (TESSERA_URL, TESSERA_API_KEY, TESSERA_MODEL_DIR, ... unset)');
}

export function client(opts = {}) {
  return new OpenAI({ baseURL: `${opts.base ?? BASE}/v1`, apiKey: opts.apiKey ?? KEY, maxRetries: 0, timeout: 120_000 });
}

// fetch with the key; returns {status, headers, text, json}.
export async function raw(path, { method = 'POST', body, headers = {}, key = KEY, base = BASE, signal } = {}) {
  const h = { ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  if (body !== undefined && typeof body !== 'string' && !(body instanceof FormData)) {
    body = JSON.stringify(body);
    h['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, body, headers: h, signal });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

// OpenAI's error object: {"error": {"message", "type", "param", "code"}}, every key present.
export function assertErrorShape(body, { status, param, code, match } = {}) {
  assert.ok(body && typeof body.error === 'object', `no error object in ${JSON.stringify(body)}`);
  const e = body.error;
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in e, `error lacks "${k}": ${JSON.stringify(e)}`);
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.type, 'string');
  if (param !== undefined) assert.equal(e.param, param, JSON.stringify(e));
  if (code !== undefined) assert.equal(e.code, code, JSON.stringify(e));
  if (match) assert.match(e.message, match);
}

// Runs the CLI; returns {status, stdout, stderr}.
export function runCli(args) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Prometheus text -> {"name{labels}": value}.
export async function metrics(base = BASE, key = KEY) {
  const r = await raw('/metrics', { method: 'GET', base, key });
  assert.equal(r.status, 200);
  const out = {};
  for (const line of r.text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

// Polls /metrics until pred(metrics) holds (cancellations land at the scheduler's next step).
export async function waitMetrics(pred, { timeoutMs = 15_000, base = BASE, key = KEY } = {}) {
  const t0 = Date.now();
  let m;
  for (;;) {
    m = await metrics(base, key);
    if (pred(m)) return m;
    if (Date.now() - t0 > timeoutMs) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
}

// A server of the test's own, without an API key: `tessera serve --port 0 ...`; resolves once it
// prints its URL.
// opts.modelDir / opts.context: another model or context than run.sh's.
export async function startServer(extraArgs = [], opts = {}) {
  const env = { ...process.env };
  delete env.TESSERA_API_KEY;  // serve reads --api-key from it
  const args = ['serve', '--model', opts.modelDir ?? MODEL_DIR, '--port', '0',
                '--context', String(opts.context ?? CONTEXT), ...extraArgs];
  const proc = spawn(BIN, args,
                     { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 60_000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}: ${err}`)); });
  });
  const exited = once(proc, 'exit');
  return {
    url, proc,
    stderr: () => err,
    // Resolves to the exit code (or the signal's name).
    exit: async () => { const [code, sig] = await exited; return code ?? sig; },
    kill: () => { if (proc.exitCode === null) proc.kill('SIGKILL'); },
  };
}

// Streams a completion and returns {text, chunks, finish, usage}.
export async function collectCompletionStream(stream) {
  let text = '', finish = null, usage = null;
  const chunks = [];
  for await (const c of stream) {
    chunks.push(c);
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += ch.text ?? ch.delta?.content ?? '';
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, chunks, finish, usage };
}
