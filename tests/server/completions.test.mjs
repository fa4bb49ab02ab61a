// /v1/completions through the official OpenAI client: shapes, usage, greedy parity with
// `tessera generate`, streaming, prompt forms, stop, seed, n and logprobs.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { client, runCli, MODEL, MODEL_DIR, CONTEXT, collectCompletionStream } from './helpers.mjs';

const openai = client();
const PROMPT = 'The quick brown fox';

async function greedy(prompt, extra = {}) {
  return openai.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0, ...extra });
}

test('a completion has OpenAI\'s shape and usage', async () => {
  const r = await greedy(PROMPT, { ignore_eos: true });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-[0-9a-f]{24}$/);
  assert.equal(r.model, MODEL);
  assert.equal(typeof r.created, 'number');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(typeof r.choices[0].text, 'string');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.choices[0].logprobs, null);
  assert.equal(r.usage.completion_tokens, 12);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 12);
  // The prompt's token count, checked through the token-id form of the same prompt.
  const ids = [2, 818, 3823, 8864, 37423];
  const byIds = await greedy(ids, { max_tokens: 1 });
  assert.equal(byIds.usage.prompt_tokens, ids.length);
});

test('greedy text equals `tessera generate`, streamed and not', async () => {
  for (const prompt of [PROMPT, 'Once upon a time']) {
    const cli = runCli(['generate', '--model', MODEL_DIR, '--context', String(CONTEXT), '--prompt', prompt,
                        '--temperature', '0', '--max-tokens', '12', '--json']);
    assert.equal(cli.status, 0, cli.stderr);
    const want = JSON.parse(cli.stdout.trim().split('\n').pop());
    const r = await greedy(prompt);
    assert.equal(r.choices[0].text, want.text);
    assert.equal(r.usage.completion_tokens, want.ids.length);
    assert.equal(r.usage.prompt_tokens, want.metrics.prompt_tokens);
    assert.equal(r.choices[0].finish_reason, want.finish_reason);
    const s = await collectCompletionStream(await greedy(prompt, { stream: true }));
    assert.equal(s.text, want.text);
    assert.equal(s.finish, want.finish_reason);
  }
});

test('a stream assembles to the non-streamed text and ends with usage when asked', async () => {
  const r = await greedy(PROMPT, { ignore_eos: true, max_tokens: 10 });
  const s = await collectCompletionStream(await greedy(PROMPT, {
    ignore_eos: true, max_tokens: 10, stream: true, stream_options: { include_usage: true } }));
  assert.equal(s.text, r.choices[0].text);
  assert.equal(s.finish, 'length');
  assert.ok(s.chunks.length >= 3);
  for (const c of s.chunks) {
    assert.equal(c.object, 'text_completion');
    assert.equal(c.id, s.chunks[0].id);
  }
  const last = s.chunks[s.chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, r.usage);
  for (const c of s.chunks.slice(0, -1)) assert.equal(c.usage, null);
});

test('prompt forms: strings, token ids, lists of token-id lists, with n', async () => {
  const r = await openai.completions.create({ model: MODEL, prompt: ['Hello', 'World'], max_tokens: 3, n: 2,
                                              temperature: 0, ignore_eos: true });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2, 3]);
  // Greedy: both choices of one prompt agree, and each matches that prompt alone.
  assert.equal(r.choices[0].text, r.choices[1].text);
  assert.equal(r.choices[2].text, r.choices[3].text);
  const world = await greedy('World', { max_tokens: 3, ignore_eos: true });
  assert.equal(r.choices[2].text, world.choices[0].text);
  assert.equal(r.usage.completion_tokens, 12);

  const lists = await openai.completions.create({ model: MODEL, prompt: [[2, 9259], [2, 9259, 1902]], max_tokens: 2,
                                                  temperature: 0, ignore_eos: true });
  assert.equal(lists.choices.length, 2);
  assert.equal(lists.usage.prompt_tokens, 5);
});

test('stop strings end the text before them', async () => {
  const full = (await greedy(PROMPT, { ignore_eos: true, max_tokens: 16 })).choices[0].text;
  assert.ok(full.length >= 6, `greedy text too short to pick a stop string from: ${JSON.stringify(full)}`);
  const stop = full.slice(3, 6);
  const want = full.slice(0, full.indexOf(stop));
  const r = await greedy(PROMPT, { ignore_eos: true, max_tokens: 16, stop: [stop, 'never-appears-here'] });
  assert.equal(r.choices[0].text, want);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await collectCompletionStream(await greedy(PROMPT, { ignore_eos: true, max_tokens: 16, stop, stream: true }));
  assert.equal(s.text, want);
  assert.equal(s.finish, 'stop');
});

test('the same seed gives the same text, another seed another', async () => {
  const sample = (seed) => openai.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 10, seed,
                                                       temperature: 1, ignore_eos: true });
  const [a, b, c] = await Promise.all([sample(42), sample(42), sample(43)]);
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.notEqual(a.choices[0].text, c.choices[0].text);
});

test('n choices use seeds seed + i', async () => {
  const r = await openai.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, n: 3, seed: 7,
                                              temperature: 1, ignore_eos: true });
  assert.equal(r.choices.length, 3);
  assert.equal(new Set(r.choices.map((c) => c.text)).size, 3);
  const third = await openai.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, seed: 9,
                                                  temperature: 1, ignore_eos: true });
  assert.equal(r.choices[2].text, third.choices[0].text);
  // Streamed, the choices interleave but each assembles to the same text.
  const s = await openai.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, n: 3, seed: 7,
                                              temperature: 1, ignore_eos: true, stream: true });
  const texts = ['', '', ''];
  for await (const c of s) for (const ch of c.choices) texts[ch.index] += ch.text;
  assert.deepEqual(texts, r.choices.map((c) => c.text));
});

test('logprobs: tokens, token_logprobs, top_logprobs and text_offset', async () => {
  const r = await greedy(PROMPT, { logprobs: 3, ignore_eos: true, max_tokens: 6 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 6);
  assert.equal(lp.token_logprobs.length, 6);
  assert.equal(lp.top_logprobs.length, 6);
  assert.equal(lp.text_offset[0], 0);
  for (let i = 0; i < 6; ++i) {
    assert.ok(lp.token_logprobs[i] <= 0);
    const alts = Object.values(lp.top_logprobs[i]);
    assert.ok(alts.length >= 1 && alts.length <= 3);
    // Greedy: the chosen token is the most likely one.
    assert.ok(Math.abs(Math.max(...alts) - lp.token_logprobs[i]) < 1e-4, JSON.stringify(lp.top_logprobs[i]));
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
  }
  // The stream carries the same per-token logprobs.
  const s = await collectCompletionStream(await greedy(PROMPT, { logprobs: 3, ignore_eos: true, max_tokens: 6,
                                                                  stream: true }));
  const tokens = s.chunks.flatMap((c) => c.choices.flatMap((ch) => ch.logprobs?.tokens ?? []));
  const values = s.chunks.flatMap((c) => c.choices.flatMap((ch) => ch.logprobs?.token_logprobs ?? []));
  assert.deepEqual(tokens, lp.tokens);
  assert.deepEqual(values, lp.token_logprobs);
});

test('min_tokens, ignore_eos and max_tokens bound the length', async () => {
  const r = await greedy(PROMPT, { max_tokens: 5, min_tokens: 5 });
  assert.equal(r.usage.completion_tokens, 5);
  const d = await openai.completions.create({ model: MODEL, prompt: PROMPT, temperature: 0, ignore_eos: true });
  assert.equal(d.usage.completion_tokens, 16);  // OpenAI's default max_tokens
});
