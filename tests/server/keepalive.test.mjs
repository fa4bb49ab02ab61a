// Keep-alive: a request the server refuses without needing its body (a wrong key, a multipart
// body, an unknown endpoint) must still take that body off the connection, or the body would be
// parsed as the next request on the socket: an innocent request reusing the connection then got
// a 400 (seen under load with fetch, which sends the body after the headers).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { BASE, KEY, MODEL } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Writes `parts` (raw HTTP/1.1 pieces) on one socket with a pause after each, then reads the
// responses. Returns [{status, close}] in order, up to the server closing the connection.
async function onOneSocket(parts, pauseMs = 150) {
  const url = new URL(BASE);
  const sock = net.connect(Number(url.port), url.hostname);
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  let buf = Buffer.alloc(0);
  sock.on('data', (d) => { buf = Buffer.concat([buf, d]); });
  sock.on('error', () => {});
  for (const p of parts) {
    if (sock.destroyed) break;
    sock.write(p);
    await sleep(pauseMs);
  }
  await sleep(300);
  sock.destroy();
  const out = [];
  for (;;) {  // Content-Length responses only (the error and JSON answers here)
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = buf.subarray(0, end).toString();
    const len = Number((/content-length:\s*(\d+)/i.exec(head) ?? [0, 0])[1]);
    out.push({ status: Number(head.split(' ')[1]), close: /^connection:\s*close/im.test(head) });
    buf = buf.subarray(end + 4 + len);
  }
  return out;
}

const host = new URL(BASE).host;
// Headers and body as separate pieces, so that the body arrives after the server could answer.
const post = (path, body, { key = KEY, type = 'application/json' } = {}) => [
  `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
  `Content-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`, body];
const postChunked = (path, body, { key = KEY, type = 'application/json' } = {}) => [
  `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
  `Content-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n`,
  `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`];
const good = post('/v1/completions', JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: 1 })).join('');
// A body that reads as a request of its own if it is left on the socket.
const trap = 'GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n'.padEnd(300, ' ');

for (const [name, first, status] of [
  ['a wrong key', post('/v1/completions', trap, { key: 'wrong' }), 401],
  ['a multipart body', post('/v1/completions', trap, { type: 'multipart/form-data; boundary=x' }), 400],
  ['an unknown endpoint', post('/v1/images/generations', trap), 404],
  ['a wrong key on an unknown endpoint', post('/v1/images/generations', trap, { key: 'wrong' }), 401],
  ['a wrong key, chunked', postChunked('/v1/completions', trap, { key: 'wrong' }), 401],
  ['a multipart body, chunked', postChunked('/v1/completions', trap, { type: 'multipart/form-data; boundary=x' }), 400],
]) {
  test(`after ${name}, the next request on the same keep-alive socket is answered as sent`, async () => {
    const res = await onOneSocket([...first, good]);
    assert.equal(res[0]?.status, status, JSON.stringify(res));
    // Either the server read the body and answers the next request (200), or it told the
    // client to close the socket; never an answer to the leftover body.
    if (res[0].close) return;
    assert.equal(res.length, 2, JSON.stringify(res));
    assert.equal(res[1].status, 200, JSON.stringify(res));
  });
}
