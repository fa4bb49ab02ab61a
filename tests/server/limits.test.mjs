// Limits on what a request can make the server do (issue #29): a Content-Length that is not a
// byte count is named as such (httplib read "-1" as 2^64 - 1 and answered "too large"), and a body
// nested past the JSON depth limit is refused before any parser walks it. Raw sockets: fetch
// cannot send a malformed Content-Length.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { BASE, KEY, MODEL } from './helpers.mjs';

// Sends one raw request and returns {status, head, body} once the server closes the socket.
async function rawRequest(text) {
  const url = new URL(BASE);
  const sock = net.connect(Number(url.port), url.hostname);
  let buf = Buffer.alloc(0);
  sock.on('data', (d) => { buf = Buffer.concat([buf, d]); });
  await new Promise((resolve, reject) => {
    sock.once('connect', () => sock.write(text));
    sock.once('close', resolve);
    sock.once('error', reject);
    setTimeout(() => { sock.destroy(); resolve(); }, 15_000);
  });
  const s = buf.toString();
  const end = s.indexOf('\r\n\r\n');
  return { status: Number(s.split(' ')[1]), head: s.slice(0, end), body: s.slice(end + 4) };
}

const head = (length) => `POST /v1/completions HTTP/1.1\r\nHost: ${new URL(BASE).host}\r\n` +
  `Authorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n` +
  `Content-Length: ${length}\r\nConnection: close\r\n\r\n`;

for (const length of ['-1', '12abc', '99999999999999999999999']) {
  test(`Content-Length: ${length} is a 400 naming the header`, async () => {
    const r = await rawRequest(head(length) + JSON.stringify({ model: MODEL, prompt: 'hi' }));
    assert.equal(r.status, 400, r.head);
    assert.equal(JSON.parse(r.body).error.message, `Content-Length '${length}' is not a byte count`);
  });
}

test('a body nested past the JSON depth limit is a 400', async () => {
  const body = '['.repeat(100_000);
  const r = await rawRequest(head(body.length) + body);
  assert.equal(r.status, 400, r.head);
  assert.equal(JSON.parse(r.body).error.message, 'the request body nests JSON deeper than 128 levels');
});
