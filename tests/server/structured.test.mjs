// Structured output through the real clients: the official `openai` client's
// chat.completions.parse, the Vercel AI SDK's generateObject (response_format json_schema),
// json_object, vLLM's choice / regex extensions and the 400s of bad constraints. The model is
// random-weight, so only the grammar makes its outputs valid.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject } from 'ai';
import { z } from 'zod';
import { client, raw, assertErrorShape, BASE, KEY, MODEL } from './helpers.mjs';

const openai = client();
const MESSAGES = [{ role: 'user', content: 'Describe a person as JSON.' }];

// Bounded (enum, maxLength, maxItems), so it always ends well within the test server's context.
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer' },
    role: { enum: ['admin', 'editor', 'viewer'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 4 }, maxItems: 2 },
    active: { type: 'boolean' },
  },
  required: ['name', 'age', 'role', 'tags', 'active'],
  additionalProperties: false,
};

function checkPerson(p) {
  assert.equal(typeof p.name, 'string');
  assert.ok([...p.name].length <= 8, p.name);
  assert.ok(Number.isInteger(p.age), String(p.age));
  assert.ok(['admin', 'editor', 'viewer'].includes(p.role), p.role);
  assert.ok(Array.isArray(p.tags) && p.tags.length <= 2);
  for (const t of p.tags) assert.ok(typeof t === 'string' && [...t].length <= 4, t);
  assert.equal(typeof p.active, 'boolean');
}

test('openai chat.completions.parse with a strict json_schema', async () => {
  for (const seed of [1, 2, 3, 4]) {
    const r = await openai.chat.completions.parse({
      model: MODEL, messages: MESSAGES, temperature: 1, seed,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: PERSON } },
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    checkPerson(r.choices[0].message.parsed);
  }
});

test('streamed, the deltas join into the same valid JSON', async () => {
  const stream = await openai.chat.completions.create({
    model: MODEL, messages: MESSAGES, temperature: 1, seed: 9, stream: true,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: PERSON } },
  });
  let text = '', finish;
  for await (const c of stream) {
    text += c.choices[0]?.delta?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'stop');
  checkPerson(JSON.parse(text));
});

test('the AI SDK generateObject with a zod schema', async () => {
  const provider = createOpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY });
  const { object } = await generateObject({
    model: provider.chat(MODEL),
    schema: z.object({
      city: z.string().max(10),
      kind: z.enum(['village', 'town', 'city']),
      rating: z.number(),
      count: z.number().int().min(0).max(99),
      visited: z.boolean(),
    }),
    prompt: 'Describe a place.',
    temperature: 1,
    seed: 5,
    maxRetries: 0,
  });
  assert.ok(['village', 'town', 'city'].includes(object.kind));
  assert.ok([...object.city].length <= 10);
  assert.equal(typeof object.rating, 'number');
  assert.ok(Number.isInteger(object.count) && object.count >= 0 && object.count <= 99, String(object.count));
  assert.equal(typeof object.visited, 'boolean');
});

test('json_object gives an object; vLLM choice and regex on completions', async () => {
  const r = await openai.chat.completions.create({
    model: MODEL, messages: MESSAGES, temperature: 1, seed: 3, max_tokens: 60,
    response_format: { type: 'json_object' },
  });
  const text = r.choices[0].message.content;
  assert.equal(text[0], '{');
  if (r.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(text), 'object');

  const c = await openai.completions.create({
    model: MODEL, prompt: 'The answer is', max_tokens: 10, temperature: 1, seed: 4,
    guided_choice: ['yes', 'no', 'maybe'],
  });
  assert.ok(['yes', 'no', 'maybe'].includes(c.choices[0].text), c.choices[0].text);
  assert.equal(c.choices[0].finish_reason, 'stop');

  const g = await openai.completions.create({
    model: MODEL, prompt: 'Date:', max_tokens: 20, temperature: 1, seed: 6, n: 3,
    structured_outputs: { regex: '\\d{4}-\\d{2}-\\d{2}' },
  });
  for (const ch of g.choices) assert.match(ch.text, /^\d{4}-\d{2}-\d{2}$/);
});

test('bad constraints are 400s naming the field', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strin' } } } },
      'response_format.json_schema.schema', /unknown type 'strin'/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', multipleOf: 3 } } } },
      'response_format.json_schema.schema', /unsupported keyword 'multipleOf'/],
    [{ response_format: { type: 'yaml' } }, 'response_format.type', /json_schema/],
    [{ guided_regex: '(ab' }, 'guided_regex', /regex/],
    [{ grammar: 'root ::= undefined-rule' }, 'grammar', /undefined rule/],
    [{ guided_choice: ['a'], guided_regex: 'a' }, 'guided_choice', /only one/],
  ];
  for (const [extra, param, match] of cases) {
    const r = await raw('/v1/chat/completions', { body: { model: MODEL, messages: MESSAGES, max_tokens: 4, ...extra } });
    assert.equal(r.status, 400, JSON.stringify(extra));
    assertErrorShape(r.json, { param, match });
  }
});
