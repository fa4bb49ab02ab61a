// --allowed-origins (CORS): off by default, preflights answered before the key check with the
// methods, Authorization among the headers and a max-age, and Access-Control-Allow-Origin on
// every response to an allowed origin: errors (401, 404, 400, 413) and event streams included.
// '*' with an API key needs --allow-any-origin-with-key. The browser itself: browser.test.mjs.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startServer, raw, assertErrorShape, BIN, MODEL, MODEL_DIR, CONTEXT } from './helpers.mjs';

const PAGE = 'http://127.0.0.1:5173';
const KEY2 = 'cors-test-key';

function preflight(base, origin, headers = 'authorization, content-type, x-stainless-lang') {
  return raw('/v1/chat/completions', {
    method: 'OPTIONS', base, key: null,
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
  });
}

test('by default no origin is allowed: a preflight is a 403 naming the flag, no response has the header', async () => {
  const s = await startServer();
  try {
    const p = await preflight(s.url, PAGE);
    assert.equal(p.status, 403);
    assertErrorShape(p.json, { code: 'origin_not_allowed', match: /--allowed-origins/ });
    assert.equal(p.headers.get('access-control-allow-origin'), null);
    const m = await raw('/v1/models', { method: 'GET', base: s.url, key: null, headers: { origin: PAGE } });
    assert.equal(m.status, 200);
    assert.equal(m.headers.get('access-control-allow-origin'), null);
  } finally {
    s.kill();
  }
});

test('an allowed origin: preflight 204 before the key check, the header on every response', async () => {
  const s = await startServer(['--api-key', KEY2, '--allowed-origins', `${PAGE},http://localhost:5173`]);
  try {
    const p = await preflight(s.url, PAGE);
    assert.equal(p.status, 204, p.text);
    assert.equal(p.headers.get('access-control-allow-origin'), PAGE);
    assert.equal(p.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
    const allowed = p.headers.get('access-control-allow-headers').toLowerCase().split(/,\s*/);
    for (const h of ['authorization', 'content-type', 'x-stainless-lang']) assert.ok(allowed.includes(h), allowed.join());
    assert.equal(allowed.filter((h) => h === 'authorization').length, 1);
    assert.equal(p.headers.get('access-control-max-age'), '7200');
    assert.match(p.headers.get('vary'), /Origin/);
    // The second listed origin too; an unlisted one is refused, and gets no header.
    assert.equal((await preflight(s.url, 'http://localhost:5173')).status, 204);
    const other = await preflight(s.url, 'http://127.0.0.1:5174');
    assert.equal(other.status, 403);
    assert.equal(other.headers.get('access-control-allow-origin'), null);

    const o = { origin: PAGE };
    const cases = [
      ['GET /v1/models', await raw('/v1/models', { method: 'GET', base: s.url, key: KEY2, headers: o }), 200],
      ['no key', await raw('/v1/models', { method: 'GET', base: s.url, key: null, headers: o }), 401],
      ['no key, with a body', await raw('/v1/chat/completions', { base: s.url, key: null, headers: o, body: { messages: [] } }), 401],
      ['unknown endpoint', await raw('/v1/nope', { method: 'GET', base: s.url, key: KEY2, headers: o }), 404],
      ['bad request', await raw('/v1/chat/completions', { base: s.url, key: KEY2, headers: o, body: { messages: 3 } }), 400],
      ['too large', await raw('/v1/completions', { base: s.url, key: KEY2, headers: o, body: 'x'.repeat(9 << 20) }), 413],
      ['/health', await raw('/health', { method: 'GET', base: s.url, key: null, headers: o }), 200],
    ];
    for (const [what, r, status] of cases) {
      assert.equal(r.status, status, `${what}: ${r.text.slice(0, 200)}`);
      assert.equal(r.headers.get('access-control-allow-origin'), PAGE, what);
      assert.equal(r.headers.getSetCookie().length, 0);
      assert.equal(r.headers.get('access-control-allow-credentials'), null, what);
    }
    // An event stream carries it in its headers.
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...o, authorization: `Bearer ${KEY2}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /text\/event-stream/);
    assert.equal(res.headers.get('access-control-allow-origin'), PAGE);
    assert.match(await res.text(), /data: \[DONE\]/);
    // A request without Origin (not a browser's) gets no CORS header.
    const plain = await raw('/v1/models', { method: 'GET', base: s.url, key: KEY2 });
    assert.equal(plain.headers.get('access-control-allow-origin'), null);
  } finally {
    s.kill();
  }
});

function serveExits(args) {
  const env = { ...process.env };
  delete env.TESSERA_API_KEY;
  const r = spawnSync(BIN, ['serve', '--model', MODEL_DIR, '--port', '0', '--context', String(CONTEXT), ...args],
                      { encoding: 'utf8', timeout: 60_000, env });
  return r;
}

test("'*' with an API key is refused unless --allow-any-origin-with-key; a malformed origin is named", async () => {
  const r = serveExits(['--api-key', 'k', '--allowed-origins', '*']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--allow-any-origin-with-key/);
  const bad = serveExits(['--allowed-origins', 'http://127.0.0.1:5173/']);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /http:\/\/127\.0\.0\.1:5173\/.*trailing slash/);

  const s = await startServer(['--api-key', 'k', '--allowed-origins', '*', '--allow-any-origin-with-key']);
  try {
    const p = await preflight(s.url, 'http://anything.example');
    assert.equal(p.status, 204);
    assert.equal(p.headers.get('access-control-allow-origin'), '*');
    const m = await raw('/v1/models', { method: 'GET', base: s.url, key: 'k', headers: { origin: 'http://x.example' } });
    assert.equal(m.headers.get('access-control-allow-origin'), '*');
    assert.equal(m.headers.get('vary'), null);
  } finally {
    s.kill();
  }
  const open = await startServer(['--allowed-origins', '*']);  // no key: '*' needs no flag
  try {
    const p = await preflight(open.url, 'http://anything.example');
    assert.equal(p.status, 204);
  } finally {
    open.kill();
  }
});
