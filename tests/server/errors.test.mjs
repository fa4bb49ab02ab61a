// Bad requests get HTTP 4xx with OpenAI's error object, through the client and raw HTTP, and
// the server carries on.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import OpenAI from 'openai';
import { client, raw, assertErrorShape, MODEL, CONTEXT } from './helpers.mjs';

const openai = client();

// The client's error for a call that must fail.
async function apiError(call) {
  try {
    await call();
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    return e;
  }
  assert.fail('the call succeeded');
}

test('malformed JSON, a non-object body, wrong types', async () => {
  const cases = [
    ['{"prompt": "x", ', undefined, /not valid JSON/],
    ['[1, 2, 3]', undefined, /JSON object/],
    ['', undefined, /empty/],
    [{ prompt: 'x', temperature: 'hot' }, 'temperature', /number/],
    [{ prompt: 'x', max_tokens: 2.5 }, 'max_tokens', /integer/],
    [{ prompt: 'x', stop: 7 }, 'stop', undefined],
    [{ prompt: { text: 'x' } }, 'prompt', undefined],
    [{ prompt: [] }, 'prompt', undefined],
    [{ prompt: ['a', 1] }, 'prompt', /mixes/],
    [{}, 'prompt', /required/],
    [{ prompt: 'x', stream: 'yes' }, 'stream', /boolean/],
  ];
  for (const [body, param, match] of cases) {
    const r = await raw('/v1/completions', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)} -> ${r.text}`);
    assertErrorShape(r.json, { param, match });
    assert.equal(r.json.error.type, 'invalid_request_error');
  }
});

test('out-of-range values are 400s that name the parameter', async () => {
  const cases = [
    [{ temperature: -1 }, 'temperature'], [{ top_p: 0 }, 'top_p'], [{ top_p: 1.5 }, 'top_p'],
    [{ min_p: 2 }, 'min_p'], [{ top_k: -5 }, 'top_k'], [{ presence_penalty: 3 }, 'presence_penalty'],
    [{ frequency_penalty: -2.5 }, 'frequency_penalty'], [{ repetition_penalty: 0 }, 'repetition_penalty'],
    [{ max_tokens: 0 }, 'max_tokens'], [{ max_tokens: -3 }, 'max_tokens'], [{ n: 0 }, 'n'], [{ n: 500 }, 'n'],
    [{ logprobs: 21 }, 'logprobs'], [{ min_tokens: 5, max_tokens: 2 }, 'min_tokens'], [{ stop: [''] }, 'stop'],
    [{ stop_token_ids: [999999999] }, 'stop_token_ids'],
  ];
  for (const [extra, param] of cases) {
    const e = await apiError(() => openai.completions.create({ model: MODEL, prompt: 'x', max_tokens: 2, ...extra }));
    assert.equal(e.status, 400, JSON.stringify(extra));
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, param, `${JSON.stringify(extra)}: ${e.message}`);
    assert.match(e.message, new RegExp(param.split('_')[0]));
  }
  const chat = await apiError(() => openai.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'x' }], top_logprobs: 3 }));
  assert.equal(chat.status, 400);
  assert.equal(chat.param, 'top_logprobs');
});

test('an unknown model is a 404 model_not_found', async () => {
  const e = await apiError(() => openai.completions.create({ model: 'gpt-17', prompt: 'x', max_tokens: 1 }));
  assert.equal(e.status, 404);
  assert.equal(e.code, 'model_not_found');
  assert.equal(e.param, 'model');
  const m = await apiError(() => openai.models.retrieve('gpt-17'));
  assert.equal(m.status, 404);
  const ok = await openai.models.retrieve(MODEL);
  assert.equal(ok.id, MODEL);
});

test('a prompt over the context is a 400 context_length_exceeded', async () => {
  const long = 'word '.repeat(CONTEXT + 10);
  const e = await apiError(() => openai.completions.create({ model: MODEL, prompt: long, max_tokens: 4 }));
  assert.equal(e.status, 400);
  assert.equal(e.code, 'context_length_exceeded');
  assert.equal(e.param, 'prompt');
  assert.match(e.message, new RegExp(`maximum context length is ${CONTEXT} tokens`));
  // A short prompt with too many max_tokens names max_tokens.
  const m = await apiError(() => openai.completions.create({ model: MODEL, prompt: 'hi', max_tokens: CONTEXT }));
  assert.equal(m.status, 400);
  assert.equal(m.code, 'context_length_exceeded');
  assert.equal(m.param, 'max_tokens');
  // Streamed requests are refused before the stream starts.
  const s = await apiError(() => openai.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: long }], stream: true }));
  assert.equal(s.status, 400);
  assert.equal(s.code, 'context_length_exceeded');
  // Token ids outside the vocabulary.
  const v = await apiError(() => openai.completions.create({ model: MODEL, prompt: [2, 10_000_000], max_tokens: 1 }));
  assert.equal(v.status, 400);
  assert.match(v.message, /outside the vocabulary/);
});

test('a body over the size limit is a 413', async () => {
  const r = await raw('/v1/completions', { body: { prompt: 'x'.repeat(9 << 20) } });
  assert.equal(r.status, 413);
  assertErrorShape(r.json, { code: 'request_too_large' });
});

test('a JSON body is read whatever its content type; multipart is refused', async () => {
  // curl -d sends application/x-www-form-urlencoded; 20 KB is over httplib's own form limit.
  const body = JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: 1, user: 'x'.repeat(20_000) });
  const r = await raw('/v1/completions', { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.usage.completion_tokens, 1);
  const form = new FormData();
  form.append('prompt', 'hi');
  const m = await raw('/v1/completions', { body: form });
  assert.equal(m.status, 400);
  assertErrorShape(m.json, { match: /multipart/ });
});

test('unknown endpoints are 404 and wrong methods 405, as error objects', async () => {
  const a = await raw('/v1/images/generations', { body: { prompt: 'x' } });
  assert.equal(a.status, 404);
  assertErrorShape(a.json, { code: 'unknown_url' });
  const b = await raw('/v1/completions', { method: 'GET' });
  assert.equal(b.status, 405);
  assertErrorShape(b.json, { code: 'method_not_allowed' });
  assert.equal(b.headers.get('allow'), 'POST');
  const c = await raw('/v1/models', { method: 'DELETE' });
  assert.equal(c.status, 405);
});

test('unsupported features are refused, not ignored', async () => {
  for (const [extra, param] of [[{ echo: true }, 'echo'], [{ logit_bias: { '5': 10 } }, 'logit_bias'],
                                [{ best_of: 3 }, 'best_of'], [{ suffix: 'x' }, 'suffix']]) {
    const e = await apiError(() => openai.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1, ...extra }));
    assert.equal(e.status, 400);
    assert.equal(e.param, param);
    assert.equal(e.code, 'unsupported_parameter');
  }
});

test('the server carries on after all of that', async () => {
  const h = await raw('/health', { method: 'GET', key: null });
  assert.equal(h.status, 200);
  assert.equal(h.json.status, 'ok');
  const r = await openai.completions.create({ model: MODEL, prompt: 'still here', max_tokens: 2, ignore_eos: true });
  assert.equal(r.usage.completion_tokens, 2);
  const list = await openai.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [MODEL]);
});
