// POST /v1/embeddings through the official client (which asks for base64 and decodes it) and the
// AI SDK's embedMany (float): shapes, usage, float == base64, batching and token-id inputs equal
// to single text inputs, dimensions (truncation + renormalisation), tessera's pooling options,
// parity with `tessera embed`, and the errors naming their field.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { embedMany } from 'ai';
import { BASE, KEY, client, raw, runCli, assertErrorShape, MODEL, MODEL_DIR, CONTEXT } from './helpers.mjs';

const openai = client();
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => { assert.equal(a.length, b.length); return Math.max(...a.map((x, i) => Math.abs(x - b[i]))); };

async function floats(body) {
  const r = await raw('/v1/embeddings', { body: { model: MODEL, encoding_format: 'float', ...body } });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

test('the official client: a unit vector per input, usage, base64 equal to float', async () => {
  const r = await openai.embeddings.create({ model: MODEL, input: ['the quick brown fox', 'jumps'] });
  assert.equal(r.object, 'list');
  assert.equal(r.model, MODEL);
  assert.deepEqual(r.data.map((d) => [d.object, d.index]), [['embedding', 0], ['embedding', 1]]);
  const f = await floats({ input: ['the quick brown fox', 'jumps'] });
  const dim = f.data[0].embedding.length;
  assert.ok(dim >= 32, `embedding size ${dim}`);
  for (let i = 0; i < 2; ++i) {
    assert.equal(r.data[i].embedding.length, dim);
    assert.ok(Math.abs(norm(r.data[i].embedding) - 1) < 1e-5);
    assert.equal(maxDiff(r.data[i].embedding, f.data[i].embedding), 0);  // the same f32 values
  }
  assert.ok(maxDiff(r.data[0].embedding, r.data[1].embedding) > 1e-3);  // different inputs differ
  assert.ok(r.usage.prompt_tokens > 4);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  assert.deepEqual(f.usage, r.usage);
});

test('batched inputs equal single ones; token ids equal their text', async () => {
  const texts = ['alpha beta', 'a much longer input that spans several words and tokens', 'z'];
  const all = await floats({ input: texts });
  for (let i = 0; i < texts.length; ++i) {
    const one = await floats({ input: texts[i] });
    assert.ok(maxDiff(all.data[i].embedding, one.data[0].embedding) < 1e-5, `input ${i}`);
  }
  const ids = [[2, 1000, 2000, 3000], [2, 77]];
  const byIds = await floats({ input: ids });
  const first = await floats({ input: ids[0] });
  assert.ok(maxDiff(byIds.data[0].embedding, first.data[0].embedding) < 1e-5);
  assert.equal(byIds.usage.prompt_tokens, 6);
});

test('dimensions: the first N values renormalised; pooling and normalize options', async () => {
  const full = (await floats({ input: 'matryoshka', normalize: false })).data[0].embedding;
  const cut = (await floats({ input: 'matryoshka', dimensions: 16 })).data[0].embedding;
  assert.equal(cut.length, 16);
  const head = full.slice(0, 16), n = norm(head);
  assert.ok(maxDiff(cut, head.map((x) => x / n)) < 1e-5);
  assert.ok(Math.abs(norm(full) - 1) > 1e-3, 'normalize: false left a unit vector');
  const mean = (await floats({ input: 'pool me please', pooling: 'mean' })).data[0].embedding;
  const last = (await floats({ input: 'pool me please', pooling: 'last' })).data[0].embedding;
  const dflt = (await floats({ input: 'pool me please' })).data[0].embedding;
  assert.ok(maxDiff(mean, last) > 1e-3);
  assert.equal(maxDiff(dflt, last), 0);  // a decoder's default: the last token
});

test('`tessera embed` gives the server\'s vectors', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-embed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'in.jsonl');
  writeFileSync(file, `${JSON.stringify({ prompt: 'hello embeddings' })}\n${JSON.stringify({ tokens: [2, 5, 9] })}\n`);
  const cli = runCli(['embed', '--model', MODEL_DIR, '--context', String(CONTEXT), '--input', file, '--pooling', 'mean']);
  assert.equal(cli.status, 0, cli.stderr);
  const lines = cli.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const srv = await floats({ input: 'hello embeddings', pooling: 'mean' });
  const ids = await floats({ input: [2, 5, 9], pooling: 'mean' });
  assert.ok(maxDiff(lines[0].embedding, srv.data[0].embedding) < 1e-5);
  assert.ok(maxDiff(lines[1].embedding, ids.data[0].embedding) < 1e-5);
  assert.equal(lines[1].prompt_tokens, 3);
});

test('the AI SDK\'s embedMany', async () => {
  const sdk = createOpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY });
  const { embeddings, usage } = await embedMany({ model: sdk.embedding(MODEL), values: ['one', 'two words'], maxRetries: 0 });
  const want = await floats({ input: ['one', 'two words'] });
  assert.equal(embeddings.length, 2);
  for (let i = 0; i < 2; ++i) assert.ok(maxDiff(embeddings[i], want.data[i].embedding) < 1e-6);
  assert.equal(usage.tokens, want.usage.prompt_tokens);
});

test('errors name the field', async () => {
  const cases = [
    [{}, 'input'],
    [{ input: '' }, 'input'],
    [{ input: [] }, 'input'],
    [{ input: [1, 'x'] }, 'input'],
    [{ input: [[1], 'x'] }, 'input'],
    [{ input: [1 << 30] }, 'input'],
    [{ input: 'x', dimensions: 0 }, 'dimensions'],
    [{ input: 'x', dimensions: 1 << 20 }, 'dimensions'],
    [{ input: 'x', encoding_format: 'bits' }, 'encoding_format'],
    [{ input: 'x', pooling: 'max' }, 'pooling'],
    [{ input: 'x', normalize: 'yes' }, 'normalize'],
    [{ input: 'x', prompt_name: 3 }, 'prompt_name'],
    [{ input: 'x', prompt_name: 'query' }, 'prompt_name'],  // the model defines no prompts
  ];
  for (const [body, param] of cases) {
    const r = await raw('/v1/embeddings', { body: { model: MODEL, ...body } });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assertErrorShape(r.json, { param });
  }
  const long = await raw('/v1/embeddings', { body: { input: 'word '.repeat(CONTEXT * 2) } });
  assert.equal(long.status, 400);
  assertErrorShape(long.json, { param: 'input', code: 'context_length_exceeded' });
  await assert.rejects(openai.embeddings.create({ model: 'nope', input: 'x' }), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError);
    return true;
  });
});
