// A small version of bench/server_load.mjs: 64 concurrent streams, a quarter aborted
// mid-stream; no request may fail and no KV block may stay in use.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { runPhase } from '../../bench/server_load.mjs';
import { BASE, KEY, MODEL, client, metrics } from './helpers.mjs';

test('64 concurrent streams with client-side cancels: 0 failures, 0 KV blocks in use after', async () => {
  const before = await metrics();
  // Aborts come after 1-2 chunks of a 32-token stream: the server has ~30 steps to see each one,
  // so the count of server-side cancels below does not depend on how fast this machine is.
  const r = await runPhase({ base: BASE, key: KEY, model: MODEL, requests: 64, concurrency: 64, cancel: 0.25,
                             maxTokens: 32, cancelAfterMax: 2, seed: 3 });
  assert.equal(r.failed, 0, r.failures.join('\n'));
  assert.equal(r.ok + r.cancelled, 64);
  assert.ok(r.cancelled >= 5, `only ${r.cancelled} cancels`);  // the plan aborts about 16
  assert.equal(r.kvBlocksUsed, 0);
  assert.equal(r.running, 0);
  const after = await metrics();
  const key = 'tessera_sequences_finished_total{reason="cancelled"}';
  // Aborted streams were cancelled in the server (not run to the end): at least most of them
  // (a stream can still end early on a sampled EOS).
  assert.ok((after[key] ?? 0) - (before[key] ?? 0) >= Math.floor(r.cancelled / 2),
            `cancelled sequences: ${(after[key] ?? 0) - (before[key] ?? 0)} of ${r.cancelled} aborted streams`);
});

test('concurrent requests share forward steps (no lock around the engine)', async () => {
  const openai = client();
  const before = await metrics();
  const n = 8, tokens = 8;
  await Promise.all(Array.from({ length: n }, (_, i) => openai.completions.create({
    model: MODEL, prompt: `request ${i}`, max_tokens: tokens, ignore_eos: true, temperature: 0 })));
  const after = await metrics();
  const steps = after.tessera_scheduler_steps_total - before.tessera_scheduler_steps_total;
  assert.equal(after.tessera_generation_tokens_total - before.tessera_generation_tokens_total, n * tokens);
  // One request at a time would take n * tokens steps; batched, about tokens plus a few.
  assert.ok(steps < (n * tokens) / 2, `${steps} steps for ${n} requests of ${tokens} tokens`);
});
