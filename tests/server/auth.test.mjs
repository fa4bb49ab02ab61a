// --api-key: requests without the right bearer token are 401s; /health stays open.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import OpenAI from 'openai';
import { client, raw, assertErrorShape, MODEL } from './helpers.mjs';

test('a missing or wrong key is a 401 with an error object', async () => {
  const none = await raw('/v1/models', { method: 'GET', key: null });
  assert.equal(none.status, 401);
  assertErrorShape(none.json, { code: 'invalid_api_key' });
  const wrong = await raw('/v1/completions', { key: 'not-the-key', body: { prompt: 'x' } });
  assert.equal(wrong.status, 401);
  assertErrorShape(wrong.json, { code: 'invalid_api_key' });
  const basic = await raw('/v1/models', { method: 'GET', key: null, headers: { authorization: 'Basic Zm9vOmJhcg==' } });
  assert.equal(basic.status, 401);
  const metrics = await raw('/metrics', { method: 'GET', key: null });
  assert.equal(metrics.status, 401);
});

test('the official client with a wrong key gets an AuthenticationError', async () => {
  const bad = client({ apiKey: 'sk-wrong' });
  await assert.rejects(bad.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1 }), (e) => {
    assert.ok(e instanceof OpenAI.AuthenticationError);
    assert.equal(e.status, 401);
    return true;
  });
  const good = await client().models.list();
  assert.equal(good.data[0].id, MODEL);
});

test('/health needs no key', async () => {
  const h = await raw('/health', { method: 'GET', key: null });
  assert.equal(h.status, 200);
});
