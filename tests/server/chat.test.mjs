// /v1/chat/completions through the official OpenAI client: shapes, greedy parity with
// `tessera chat`, deltas, logprobs, the default length and template errors.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { client, runCli, raw, assertErrorShape, MODEL, MODEL_DIR, CONTEXT } from './helpers.mjs';

const openai = client();
const MESSAGES = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Name a colour.' }];

test('a chat completion has OpenAI\'s shape', async () => {
  const r = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 6, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-[0-9a-f]{24}$/);
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.prompt_tokens > 10);  // the template's turn markers count too
});

test('greedy chat equals `tessera chat --messages`, streamed and not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-chat-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'messages.json');
  writeFileSync(file, JSON.stringify(MESSAGES));
  const cli = runCli(['chat', '--model', MODEL_DIR, '--context', String(CONTEXT), '--messages', file,
                      '--temperature', '0', '--max-tokens', '10']);
  assert.equal(cli.status, 0, cli.stderr);
  const want = cli.stdout.replace(/\n$/, '');
  const r = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 10, temperature: 0 });
  assert.equal(r.choices[0].message.content, want);
  const s = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 10, temperature: 0,
                                                   stream: true });
  let text = '', first = true, finish = null;
  for await (const c of s) {
    assert.equal(c.object, 'chat.completion.chunk');
    const ch = c.choices[0];
    if (first) assert.deepEqual(ch.delta, { role: 'assistant', content: '' });
    first = false;
    text += ch.delta.content ?? '';
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  assert.equal(text, want);
  assert.equal(finish, r.choices[0].finish_reason);
});

test('stream usage, n choices and seeds', async () => {
  const s = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 5, n: 2, seed: 11,
                                                   temperature: 1, ignore_eos: true, stream: true,
                                                   stream_options: { include_usage: true } });
  const texts = ['', ''];
  let usage = null;
  for await (const c of s) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) texts[ch.index] += ch.delta.content ?? '';
  }
  assert.equal(usage.completion_tokens, 10);
  const r = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 5, n: 2, seed: 11,
                                                   temperature: 1, ignore_eos: true });
  assert.deepEqual(r.choices.map((c) => c.message.content), texts);
  assert.notEqual(texts[0], texts[1]);
});

test('chat logprobs: content entries with token, logprob, bytes and top_logprobs', async () => {
  const r = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 4, temperature: 0,
                                                   ignore_eos: true, logprobs: true, top_logprobs: 2 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 4);
  for (const e of content) {
    assert.equal(typeof e.token, 'string');
    assert.ok(e.logprob <= 0);
    assert.ok(Array.isArray(e.bytes) && e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
    if (!e.token.includes('\ufffd')) assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
    assert.equal(e.top_logprobs.length, 2);
    assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-4);  // greedy picks the likeliest
    assert.ok(e.top_logprobs[1].logprob <= e.top_logprobs[0].logprob);
  }
  const s = await openai.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 4, temperature: 0,
                                                   ignore_eos: true, logprobs: true, top_logprobs: 2, stream: true });
  const streamed = [];
  for await (const c of s) for (const ch of c.choices) streamed.push(...(ch.logprobs?.content ?? []));
  assert.deepEqual(streamed, content);
});

test('without max_tokens a chat may run to the end of the context', async () => {
  // A prompt a few tokens short of the context: the default leaves exactly the rest.
  const long = 'word '.repeat(CONTEXT);
  const probe = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }],
                                                       max_tokens: 1, temperature: 0 });
  const overhead = probe.usage.prompt_tokens - 1;
  const words = long.split(' ').slice(0, CONTEXT - overhead - 6).join(' ');
  const r = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: words }],
                                                   temperature: 0, ignore_eos: true });
  assert.equal(r.usage.prompt_tokens + r.usage.completion_tokens, CONTEXT);
  assert.equal(r.choices[0].finish_reason, 'length');
});

test('messages the template or the API refuse are 400s naming messages', async () => {
  // Gemma's template insists on alternating user/assistant turns.
  const bad = await raw('/v1/chat/completions', { body: { model: MODEL, max_tokens: 2, messages: [
    { role: 'user', content: 'a' }, { role: 'user', content: 'b' }] } });
  assert.equal(bad.status, 400);
  assertErrorShape(bad.json, { param: 'messages', match: /template/ });
  const role = await raw('/v1/chat/completions', { body: { messages: [{ role: 'wizard', content: 'a' }] } });
  assert.equal(role.status, 400);
  assertErrorShape(role.json, { param: 'messages[0].role' });
  const image = await raw('/v1/chat/completions', { body: { messages: [
    { role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x' } }] }] } });
  assert.equal(image.status, 400);
  assertErrorShape(image.json, { param: 'messages[0].content' });
});
