// Servers of the tests' own: --max-queue (429), graceful SIGTERM (in-flight streams finish, new
// requests get 503, exit 0) and the shutdown timeout (streams are cut with finish_reason abort).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, client, raw, MODEL } from './helpers.mjs';

async function firstChunk(iter) {
  const it = iter[Symbol.asyncIterator]();
  for (;;) {
    const { value, done } = await it.next();
    if (done) throw new Error('stream ended before any text');
    if (value.choices[0]?.text) return it;
  }
}

async function drain(it) {
  let text = '', finish = null, n = 0;
  for (;;) {
    const { value, done } = await it.next();
    if (done) return { text, finish, n };
    for (const ch of value.choices) {
      text += ch.text ?? '';
      if (ch.text) ++n;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
}

test('--max-queue: requests beyond it get 429 queue_full, and the server recovers', async () => {
  const s = await startServer(['--max-queue', '1']);
  try {
    const openai = client({ base: s.url, apiKey: 'unused' });
    const controller = new AbortController();
    const stream = await openai.completions.create(
      { model: MODEL, prompt: 'busy', max_tokens: 200, ignore_eos: true, stream: true }, { signal: controller.signal });
    await firstChunk(stream);
    await assert.rejects(openai.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1 }), (e) => {
      assert.ok(e instanceof OpenAI.RateLimitError);
      assert.equal(e.status, 429);
      assert.equal(e.code, 'queue_full');
      return true;
    });
    const tooMany = await raw('/v1/completions', { base: s.url, key: null, body: { prompt: 'x', n: 2 } });
    assert.equal(tooMany.status, 400);
    controller.abort();
    // The aborted stream's slot comes back once its cancel lands.
    let r;
    for (let i = 0; i < 50; ++i) {
      r = await raw('/v1/completions', { base: s.url, key: null, body: { prompt: 'x', max_tokens: 1 } });
      if (r.status === 200) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(r.status, 200, r.text);
  } finally {
    s.kill();
  }
});

test('SIGTERM: in-flight streams finish, new requests get 503, exit status 0', async () => {
  const s = await startServer();
  try {
    const openai = client({ base: s.url, apiKey: 'unused' });
    const stream = await openai.completions.create({ model: MODEL, prompt: 'drain me', max_tokens: 24,
                                                     ignore_eos: true, stream: true });
    const it = await firstChunk(stream);
    s.proc.kill('SIGTERM');
    await new Promise((res) => setTimeout(res, 200));
    const refused = await raw('/v1/completions', { base: s.url, key: null, body: { prompt: 'x', max_tokens: 1 } })
      .catch((e) => ({ status: 'refused', error: e }));
    if (refused.status !== 'refused') {  // the listener may still accept while it drains
      assert.equal(refused.status, 503);
      assert.equal(refused.json.error.code, 'shutting_down');
    }
    const rest = await drain(it);
    assert.equal(rest.finish, 'length');
    assert.equal(await s.exit(), 0, s.stderr());
  } finally {
    s.kill();
  }
});

test('SIGTERM past --shutdown-timeout: streams end with finish_reason abort, exit status 0', async () => {
  const s = await startServer(['--shutdown-timeout', '1']);
  try {
    const openai = client({ base: s.url, apiKey: 'unused' });
    const stream = await openai.completions.create({ model: MODEL, prompt: 'never done', max_tokens: 240,
                                                     ignore_eos: true, stream: true });
    const it = await firstChunk(stream);
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    const rest = await drain(it);
    assert.equal(rest.finish, 'abort');
    assert.equal(await s.exit(), 0, s.stderr());
    assert.ok(Date.now() - t0 < 8000, `shutdown took ${Date.now() - t0} ms`);
  } finally {
    s.kill();
  }
});
