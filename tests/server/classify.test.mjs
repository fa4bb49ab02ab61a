// POST /v1/classify: the next token at the end of each prompt, as `tessera classify` gives it.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { raw, runCli, assertErrorShape, MODEL, MODEL_DIR, CONTEXT } from './helpers.mjs';

const PROMPTS = ['Is the sky blue? Answer:', 'The capital of France is', 'Two plus two equals'];

test('classify matches `tessera classify` token for token', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-classify-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'in.jsonl');
  writeFileSync(file, PROMPTS.map((p) => JSON.stringify({ prompt: p })).join('\n') + '\n');
  const cli = runCli(['classify', '--model', MODEL_DIR, '--context', String(CONTEXT), '--input', file,
                      '--top-logprobs', '3']);
  assert.equal(cli.status, 0, cli.stderr);
  const want = cli.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const r = await raw('/v1/classify', { body: { model: MODEL, prompt: PROMPTS, top_logprobs: 3 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.object, 'classification');
  assert.equal(r.json.model, MODEL);
  assert.equal(r.json.data.length, PROMPTS.length);
  let promptTokens = 0;
  r.json.data.forEach((d, i) => {
    assert.equal(d.index, i);
    assert.equal(d.token, want[i].token);
    assert.equal(d.text, want[i].text);
    assert.ok(d.logprob <= 0);
    assert.deepEqual(d.top_logprobs.map((t) => t.token), want[i].top_logprobs.map((t) => t.token));
    assert.equal(d.top_logprobs[0].token, d.token);  // temperature 0: the argmax
    assert.ok(!('logits' in d));
    promptTokens += d.prompt_tokens;
  });
  assert.deepEqual(r.json.usage, { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens });
});

test('return_logits gives the whole row, whose argmax is the token', async () => {
  const r = await raw('/v1/classify', { body: { prompt: [[2, 9259, 1902]], return_logits: true } });
  assert.equal(r.status, 200, r.text);
  const d = r.json.data[0];
  assert.equal(d.prompt_tokens, 3);
  assert.ok(d.logits.length > 1000);
  let best = 0;
  for (let i = 1; i < d.logits.length; ++i) if (d.logits[i] > d.logits[best]) best = i;
  assert.equal(best, d.token);
  assert.ok(!('top_logprobs' in d));
});

test('classify errors name the parameter', async () => {
  const a = await raw('/v1/classify', { body: { prompt: 'x', top_logprobs: 99 } });
  assert.equal(a.status, 400);
  assertErrorShape(a.json, { param: 'top_logprobs' });
  const b = await raw('/v1/classify', { body: { prompt: 'word '.repeat(CONTEXT + 5) } });
  assert.equal(b.status, 400);
  assertErrorShape(b.json, { param: 'prompt', code: 'context_length_exceeded' });
  const c = await raw('/v1/classify', { body: { prompts: ['x'] } });
  assert.equal(c.status, 400);
  assertErrorShape(c.json, { param: 'prompt' });
  const d = await raw('/v1/classify', { body: { prompt: 'x', temperature: -2 } });
  assert.equal(d.status, 400);
  assertErrorShape(d.json, { param: 'temperature' });
});
