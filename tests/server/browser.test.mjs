// A real browser against --allowed-origins: headless Chromium (Debian's chromium and
// chromium-driver, driven over WebDriver's HTTP protocol, https://w3c.github.io/webdriver/) loads
// a page from a second loopback origin that streams a chat completion through fetch (the
// preflight, the Authorization header, the event stream read chunk by chunk) and renders it.
// Checked: the rendered text is the completion's, it arrived in several chunks, and the
// screenshot equals one of the same page rendering that text statically; the same page from an
// origin the server does not list cannot read the response (the browser blocks it).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { startServer, raw, MODEL } from './helpers.mjs';

const CHROMIUM = '/usr/bin/chromium';
const DRIVER = '/usr/bin/chromedriver';
const KEY = 'browser-test-key';
const BODY = { model: MODEL, messages: [{ role: 'user', content: 'Write a short line.' }],
               max_tokens: 24, temperature: 0, ignore_eos: true };

// One page for both renderings: ?api=URL streams from tessera; #text renders text as given.
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>loading</title>
<style>body{margin:16px;font:16px monospace;background:#fff;color:#000}#out{white-space:pre-wrap;word-break:break-all}</style>
</head><body><div id="out"></div><script>
const out = document.getElementById('out');
const q = new URLSearchParams(location.search);
async function stream() {
  const res = await fetch(q.get('api') + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'Authorization': 'Bearer ' + q.get('key'), 'Content-Type': 'application/json' },
    body: q.get('body'),
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '', chunks = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf('\\n\\n')) >= 0) {
      const line = buf.slice(0, i); buf = buf.slice(i + 2);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const d = JSON.parse(line.slice(6)).choices[0]?.delta?.content;
      if (d) { out.textContent += d; ++chunks; }
    }
  }
  window.chunks = chunks;
}
if (q.has('api')) {
  stream().then(() => { document.title = 'done'; }, (e) => { window.failure = String(e); document.title = 'failed'; });
} else {
  out.textContent = decodeURIComponent(location.hash.slice(1));
  document.title = 'done';
}
</script></body></html>`;

async function wd(base, method, path, body) {
  const r = await fetch(base + path, { method, headers: { 'content-type': 'application/json' },
                                       body: body === undefined ? undefined : JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`webdriver ${method} ${path}: ${JSON.stringify(j.value).slice(0, 500)}`);
  return j.value;
}

async function startDriver() {
  const port = 9515 + Math.floor(Math.random() * 2000);
  const proc = spawn(DRIVER, [`--port=${port}`], { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; ++i) {
    try { if ((await fetch(base + '/status')).ok) return { base, proc }; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error('chromedriver did not start');
}

const missing = [CHROMIUM, DRIVER].filter((p) => !existsSync(p));
const skip = missing.length > 0 && !process.env.CI
  ? `needs ${missing.join(' and ')} (Debian: chromium chromium-driver; scripts/setup.sh installs them)` : false;

test('a page on a second origin streams a chat completion through fetch', { skip, timeout: 180_000 }, async () => {
  const pages = createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(PAGE); });
  pages.listen(0, '127.0.0.1');
  await once(pages, 'listening');
  const pagePort = pages.address().port;
  const origin = `http://127.0.0.1:${pagePort}`;
  const s = await startServer(['--api-key', KEY, '--allowed-origins', origin]);
  const driver = await startDriver();
  let session;
  try {
    // What the page should show: the same greedy completion, asked for without a browser.
    const want = await raw('/v1/chat/completions', { base: s.url, key: KEY, body: BODY });
    assert.equal(want.status, 200, want.text);
    const text = want.json.choices[0].message.content;
    assert.ok(text.length > 0);

    const caps = { capabilities: { alwaysMatch: { browserName: 'chrome', 'goog:chromeOptions': {
      binary: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=800,600',
             '--font-render-hinting=none', '--hide-scrollbars'] } } } };
    session = (await wd(driver.base, 'POST', '/session', caps)).sessionId;
    const S = `/session/${session}`;
    const load = async (url) => {
      await wd(driver.base, 'POST', `${S}/url`, { url });
      for (let i = 0; i < 600; ++i) {
        const title = await wd(driver.base, 'POST', `${S}/execute/sync`, { script: 'return document.title', args: [] });
        if (title !== 'loading') return title;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`${url} did not finish`);
    };
    const js = (script) => wd(driver.base, 'POST', `${S}/execute/sync`, { script, args: [] });
    const query = (host) => `http://${host}:${pagePort}/?api=${encodeURIComponent(s.url)}&key=${KEY}` +
                            `&body=${encodeURIComponent(JSON.stringify({ ...BODY, stream: true }))}`;

    assert.equal(await load(query('127.0.0.1')), 'done', await js('return window.failure'));
    assert.equal(await js("return document.getElementById('out').textContent"), text);
    assert.ok(await js('return window.chunks') > 1, 'the text arrived in one piece: not streamed');
    const streamed = await wd(driver.base, 'GET', `${S}/screenshot`);
    assert.equal(await load(`${origin}/#${encodeURIComponent(text)}`), 'done');
    const still = await wd(driver.base, 'GET', `${S}/screenshot`);
    assert.ok(streamed.length > 1000);
    assert.ok(streamed === still, 'the streamed page renders differently from the same text rendered statically');

    // localhost is another origin than 127.0.0.1: the browser must refuse the page the response.
    assert.equal(await load(query('localhost')), 'failed');
    assert.match(await js('return window.failure'), /TypeError/);
    assert.equal(await js("return document.getElementById('out').textContent"), '');
  } finally {
    if (session) await wd(driver.base, 'DELETE', `/session/${session}`).catch(() => {});
    driver.proc.kill('SIGKILL');
    s.kill();
    pages.close();
  }
});
