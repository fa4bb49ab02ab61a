// A client that goes away cancels its request: the sequence stops generating and its KV blocks
// are freed, for streamed and non-streamed requests.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { client, raw, waitMetrics, metrics, MODEL } from './helpers.mjs';

const CANCELLED = 'tessera_sequences_finished_total{reason="cancelled"}';
const openai = client();

test('a stream aborted mid-way is cancelled and frees its KV blocks', async () => {
  const before = (await metrics())[CANCELLED] ?? 0;
  const controller = new AbortController();
  // Hundreds of tokens: far longer than the test waits, so only a cancel ends it in time.
  const stream = await openai.completions.create(
    { model: MODEL, prompt: 'Count forever:', max_tokens: 200, ignore_eos: true, stream: true },
    { signal: controller.signal });
  let chunks = 0;
  for await (const c of stream) {
    if (c.choices[0]?.text) ++chunks;
    if (chunks === 2) break;  // leaving the loop aborts the HTTP request
  }
  const during = await metrics();
  const m = await waitMetrics((x) => (x[CANCELLED] ?? 0) > before && x.tessera_kv_blocks_used === 0, { timeoutMs: 8000 });
  assert.equal((m[CANCELLED] ?? 0) - before, 1, 'the sequence was not cancelled');
  assert.equal(m.tessera_kv_blocks_used, 0);
  assert.equal(m.tessera_running_sequences, 0);
  assert.ok(m.tessera_generation_tokens_total - during.tessera_generation_tokens_total < 150);
});

test('a non-streamed request whose client leaves is cancelled too', async () => {
  const before = (await metrics())[CANCELLED] ?? 0;
  const controller = new AbortController();
  const pending = raw('/v1/completions', { signal: controller.signal,
    body: { model: MODEL, prompt: 'Count forever:', max_tokens: 200, ignore_eos: true } }).catch((e) => e);
  await waitMetrics((x) => x.tessera_running_sequences === 1, { timeoutMs: 8000 });
  controller.abort();
  assert.equal((await pending).name, 'AbortError');
  const m = await waitMetrics((x) => (x[CANCELLED] ?? 0) > before && x.tessera_running_sequences === 0, { timeoutMs: 8000 });
  assert.equal((m[CANCELLED] ?? 0) - before, 1, 'the sequence was not cancelled');
  assert.equal(m.tessera_kv_blocks_used, 0);
});

test('/metrics has the families a dashboard needs', async () => {
  const m = await metrics();
  for (const name of ['tessera_kv_blocks_used', 'tessera_kv_blocks_free', 'tessera_queue_depth',
                      'tessera_running_sequences', 'tessera_prompt_tokens_total', 'tessera_generation_tokens_total',
                      'tessera_time_to_first_token_seconds_count', 'tessera_preemptions_total'])
    assert.ok(name in m, `${name} missing`);
  assert.ok(m['tessera_http_requests_total{endpoint="completions",status="200"}'] > 0);
  assert.ok(Object.keys(m).some((k) => k.startsWith('tessera_request_duration_seconds_bucket{endpoint="completions"')));
  assert.equal(m.tessera_kv_blocks_used + m.tessera_kv_blocks_free, m.tessera_kv_blocks_total);
  assert.ok(m.tessera_time_to_first_token_seconds_count > 0);
});
