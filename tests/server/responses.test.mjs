// POST /v1/responses through the official client's responses.create and the Vercel AI SDK's
// default provider call (openai(model), which is the Responses API): greedy parity with
// /v1/chat/completions on the same turns, the typed stream events, usage, and the refusals
// (store, previous_response_id, tools; a text.format without its schema) naming the field, and
// text.format as structured output.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import { BASE, KEY, client, raw, metrics, assertErrorShape, MODEL } from './helpers.mjs';

const openai = client();

async function chatText(messages, max_tokens) {
  const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens, temperature: 0 });
  return { text: r.choices[0].message.content, usage: r.usage, finish: r.choices[0].finish_reason };
}

test('responses.create equals chat on the same turns; the object has the Responses shape', async () => {
  const want = await chatText([{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Name a colour.' }], 8);
  const r = await openai.responses.create({ model: MODEL, instructions: 'Be terse.', input: 'Name a colour.',
                                            max_output_tokens: 8, temperature: 0, metadata: { run: 't1' } });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_[0-9a-f]{24}$/);
  assert.equal(r.model, MODEL);
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(r.output[0].content[0].type, 'output_text');
  assert.equal(r.output_text, want.text);  // the client's own concatenation of the output
  assert.equal(r.usage.input_tokens, want.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, want.usage.completion_tokens);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.instructions, 'Be terse.');
  assert.equal(r.max_output_tokens, 8);
  assert.deepEqual(r.metadata, { run: 't1' });
  assert.equal(r.store, false);
  assert.equal(r.status, want.finish === 'length' ? 'incomplete' : 'completed');
  if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
});

test('message items as input: user parts, an earlier assistant reply, a developer turn', async () => {
  const want = await chatText([{ role: 'system', content: 'Rules.' }, { role: 'user', content: 'Hi there' },
                               { role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'Again' }], 6);
  const r = await openai.responses.create({ model: MODEL, max_output_tokens: 6, temperature: 0, input: [
    { role: 'developer', content: 'Rules.' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi ' }, { type: 'input_text', text: 'there' }] },
    { role: 'assistant', content: [{ type: 'output_text', text: 'Hello.' }] },
    { role: 'user', content: 'Again' }] });
  assert.equal(r.output_text, want.text);
});

test('stream: the Responses event types in order, deltas adding up to the text', async () => {
  const want = await openai.responses.create({ model: MODEL, input: 'Count.', max_output_tokens: 12, temperature: 0 });
  const stream = await openai.responses.create({ model: MODEL, input: 'Count.', max_output_tokens: 12, temperature: 0,
                                                 stream: true });
  const types = [];
  let text = '', seq = -1, final;
  for await (const ev of stream) {
    types.push(ev.type);
    assert.equal(ev.sequence_number, seq + 1);
    seq = ev.sequence_number;
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.output_text.done') assert.equal(ev.text, text);
    if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
  }
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added',
                                       'response.content_part.added']);
  assert.ok(types.filter((t) => t === 'response.output_text.delta').length > 1);
  assert.deepEqual(types.slice(-4, -1), ['response.output_text.done', 'response.content_part.done',
                                         'response.output_item.done']);
  assert.equal(types.at(-1), want.status === 'completed' ? 'response.completed' : 'response.incomplete');
  assert.equal(final.status, want.status);
  assert.equal(text, want.output_text);
  assert.equal(final.output[0].content[0].text, text);
  assert.equal(final.usage.output_tokens, want.usage.output_tokens);
});

test('the AI SDK\'s default provider call (openai(model): the Responses API) generates and streams', async () => {
  const before = await metrics();
  const label = 'tessera_http_requests_total{endpoint="responses",status="200"}';
  const sdk = createOpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY });
  const want = await chatText([{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Say hi.' }], 10);
  const g = await generateText({ model: sdk(MODEL), system: 'Be terse.', prompt: 'Say hi.', maxOutputTokens: 10,
                                 temperature: 0, maxRetries: 0 });
  assert.equal(g.text, want.text);
  assert.equal(g.usage.inputTokens, want.usage.prompt_tokens);
  assert.equal(g.usage.outputTokens, want.usage.completion_tokens);
  assert.equal(g.finishReason, want.finish === 'length' ? 'length' : 'stop');
  const s = streamText({ model: sdk(MODEL), system: 'Be terse.', prompt: 'Say hi.', maxOutputTokens: 10,
                         temperature: 0, maxRetries: 0, onError: ({ error }) => { throw error; } });
  let streamed = '', parts = 0;
  for await (const d of s.textStream) { streamed += d; ++parts; }
  assert.equal(streamed, want.text);
  assert.ok(parts > 1);
  assert.equal((await s.usage).outputTokens, want.usage.completion_tokens);
  const after = await metrics();
  assert.equal((after[label] ?? 0) - (before[label] ?? 0), 2, 'the SDK did not call /v1/responses twice');
});

test('text.format json_schema: structured output, the text parses and validates (random model, temperature 1)', async () => {
  const schema = { type: 'object', properties: { colour: { type: 'string', enum: ['red', 'green', 'blue'] },
                                                 count: { type: 'integer', minimum: 0, maximum: 9 } },
                   required: ['colour', 'count'], additionalProperties: false };
  for (let i = 0; i < 3; i++) {
    const r = await openai.responses.create({ model: MODEL, input: 'Pick one.', max_output_tokens: 64, temperature: 1,
                                              text: { format: { type: 'json_schema', name: 'pick', schema, strict: true } } });
    const v = JSON.parse(r.output_text);
    assert.deepEqual(Object.keys(v).sort(), ['colour', 'count']);
    assert.ok(['red', 'green', 'blue'].includes(v.colour), r.output_text);
    assert.ok(Number.isInteger(v.count) && v.count >= 0 && v.count <= 9, r.output_text);
  }
});

test('refusals name the field: store, previous_response_id, text.format, tools, input', async () => {
  const cases = [
    [{ input: 'x', store: true }, 'store'],
    [{ input: 'x', previous_response_id: 'resp_0' }, 'previous_response_id'],
    [{ input: 'x', text: { format: { type: 'json_schema', name: 'n' } } }, 'text.format.schema'],
    [{ input: 'x', text: { format: { type: 'json_schema', name: 'n', schema: { type: 'object', properties: { a: { type: 'number', multipleOf: 3 } } } } } }, 'text.format.schema'],
    [{ input: 'x', tools: [{ type: 'function', name: 'f', parameters: {} }] }, 'tools'],
    [{}, 'input'],
    [{ input: [{ type: 'input_image', image_url: 'x' }] }, 'input[0].type'],
    [{ input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
    [{ input: 'x', temperature: -1 }, 'temperature'],
  ];
  for (const [body, param] of cases) {
    await assert.rejects(openai.responses.create({ model: MODEL, ...body }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
      assert.equal(e.param, param, e.message);
      return true;
    });
  }
  const wrongModel = await raw('/v1/responses', { body: { model: 'nope', input: 'x' } });
  assert.equal(wrongModel.status, 404);
  assertErrorShape(wrongModel.json, { code: 'model_not_found' });
  const get = await raw('/v1/responses', { method: 'GET' });
  assert.equal(get.status, 405);
  const long = await raw('/v1/responses', { body: { input: 'word '.repeat(400), max_output_tokens: 4 } });
  assert.equal(long.status, 400);
  assertErrorShape(long.json, { param: 'input', code: 'context_length_exceeded' });
});
