// Interoperability check of bin/mcpkit against the official TypeScript MCP
// clients, driven by test/interop_test.go (TestTypeScriptClients).
//
//   node run.mjs --transport stdio --era 2025-11-25 --bin ../../bin/mcpkit
//   node run.mjs --transport http  --era 2026-07-28 --url http://127.0.0.1:PORT/mcp
//
// The legacy era (2025-11-25) uses @modelcontextprotocol/sdk 1.x, whose
// latest protocol it is. The 2026-07-28 era uses @modelcontextprotocol/client
// 2.x pinned to that revision (versionNegotiation {mode: {pin}}): connect()
// must negotiate it through server/discover or fail, never fall back. Both
// packages ship a stdio and a streamable HTTP client transport, so every
// transport × era combination runs.
//
// Besides echo, paging and mcpkit://info, it checks diag_blob's output
// schema (the union of its result, the paged reference and the error reply)
// with an inline and a paged result, and error kinds (bad_params with the
// argument's path, a plugin's own kind), which the 1.x client validates
// against that schema too.
//
// It prints one summary line and exits 0, or prints what failed and exits 1.

import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';

const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';
const BLOB_BYTES = 300000;
const SMALL_BLOB_BYTES = 1000;
const BLOB_SEED = 5;
const MAX_CHUNK = 262144;
const TIMEOUT_MS = 20000;

const { values: opts } = parseArgs({
  options: {
    transport: { type: 'string' },
    era: { type: 'string' },
    bin: { type: 'string' },
    url: { type: 'string' },
  },
});

class CheckError extends Error {}

function check(cond, what) {
  if (!cond) throw new CheckError(what);
}

const trunc = (v, n = 300) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s && s.length > n ? s.slice(0, n) + '…' : s;
};

function usage(msg) {
  console.error(`run.mjs: ${msg}\nusage: node run.mjs --transport stdio|http --era ${LEGACY}|${MODERN} (--bin PATH | --url URL)`);
  process.exit(2);
}

if (opts.transport !== 'stdio' && opts.transport !== 'http') usage(`bad --transport ${opts.transport}`);
if (opts.era !== LEGACY && opts.era !== MODERN) usage(`bad --era ${opts.era}`);
if (opts.transport === 'stdio' && !opts.bin) usage('--transport stdio needs --bin');
if (opts.transport === 'http' && !opts.url) usage('--transport http needs --url');

const label = `${opts.transport}/${opts.era}`;
let step = 'setup';
let stderrText = '';
let client;

// connect returns a connected client and the protocol version it negotiated.
async function connect() {
  const info = { name: 'mcpkit-interop', version: '1.0.0' };
  const stdioParams = {
    command: opts.bin,
    args: ['serve', '--stdio', '--plugins', 'diag'],
    stderr: 'pipe',
  };
  if (opts.era === LEGACY) {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    let transport;
    if (opts.transport === 'stdio') {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      transport = new StdioClientTransport(stdioParams);
    } else {
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      transport = new StreamableHTTPClientTransport(new URL(opts.url));
    }
    collectStderr(transport);
    // The 1.x Client keeps the negotiated version to itself: it hands it to
    // transport.setProtocolVersion when the transport has one (HTTP does,
    // stdio does not). Record it there.
    let negotiated;
    const inner = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => {
      negotiated = v;
      inner?.(v);
    };
    client = new Client(info, { capabilities: {} });
    await client.connect(transport, { timeout: TIMEOUT_MS });
    return negotiated;
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  let transport;
  if (opts.transport === 'stdio') {
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    transport = new StdioClientTransport(stdioParams);
  } else {
    transport = new StreamableHTTPClientTransport(new URL(opts.url));
  }
  collectStderr(transport);
  client = new Client(info, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport, { timeout: TIMEOUT_MS });
  return client.getNegotiatedProtocolVersion();
}

function collectStderr(transport) {
  const s = opts.transport === 'stdio' ? transport.stderr : null;
  s?.on('data', (b) => {
    stderrText += b.toString();
  });
}

// call invokes a tool and returns its result, failing on isError. It checks
// that the text content carries the same JSON as structuredContent.
async function call(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: TIMEOUT_MS });
  const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  check(!res.isError, `${name}: isError result: ${trunc(text)}`);
  const sc = res.structuredContent;
  check(sc && typeof sc === 'object', `${name}: no structuredContent (content: ${trunc(res.content)})`);
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new CheckError(`${name}: text content is not JSON (${e.message}): ${trunc(text)}`);
  }
  check(JSON.stringify(canon(parsed)) === JSON.stringify(canon(sc)),
    `${name}: text content ${trunc(text)} differs from structuredContent ${trunc(sc)}`);
  return sc;
}

// callError invokes a tool that must fail and returns the error of its
// structuredContent ({kind, message, ...}), checking that the text content
// is the message.
async function callError(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: TIMEOUT_MS });
  const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  check(res.isError === true, `${name}: want an isError result, got ${trunc(res)}`);
  const err = res.structuredContent?.error;
  check(err && typeof err.kind === 'string' && err.message === text, `${name}: error result ${trunc(res)}`);
  return err;
}

// canon sorts object keys so that two JSON values compare by content.
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  }
  return v;
}

async function main() {
  step = 'connect';
  const negotiated = await connect();
  check(negotiated === opts.era, `negotiated protocol version ${negotiated}, want ${opts.era}`);

  step = 'tools/list';
  const { tools } = await client.listTools(undefined, { timeout: TIMEOUT_MS });
  const names = tools.map((t) => t.name);
  for (const want of ['diag_echo', 'diag_blob', 'diag_sleep', 'diag_result']) {
    check(names.includes(want), `tools/list lacks ${want}: got ${names.join(', ')}`);
  }

  step = 'diag_blob output schema';
  const blobTool = tools.find((t) => t.name === 'diag_blob');
  const union = blobTool?.outputSchema;
  check(union?.type === 'object' && Array.isArray(union.anyOf) && union.anyOf.length === 3,
    `diag_blob outputSchema is not the object union of its result, the paged reference and the error reply: ${trunc(union)}`);

  step = 'diag_echo';
  const message = 'interop ✓ héllo "quoted" \u{1F600}';
  const echo = await call('diag_echo', { message });
  check(echo.message === message, `diag_echo returned message ${JSON.stringify(echo.message)}, want ${JSON.stringify(message)}`);

  // diag_blob declares an output schema: the clients validate every
  // structuredContent of it (the 1.x client error results too) against it.
  step = 'diag_blob inline';
  const small = await call('diag_blob', { bytes: SMALL_BLOB_BYTES, seed: BLOB_SEED });
  const smallData = Buffer.from(small.data_base64 ?? '', 'base64');
  check(small.bytes === SMALL_BLOB_BYTES && smallData.length === SMALL_BLOB_BYTES && small.result_id === undefined,
    `diag_blob of ${SMALL_BLOB_BYTES} bytes did not come back inline: ${trunc(small)}`);
  check(createHash('sha256').update(smallData).digest('hex') === small.sha256, 'inline blob: sha256 mismatch');

  step = 'error kinds';
  const bad = await callError('diag_blob', { bytes: 'many' });
  check(bad.kind === 'bad_params' && bad.path === '/bytes', `diag_blob with a string size: error ${trunc(bad)}, want bad_params at /bytes`);
  const tooBig = await callError('diag_blob', { bytes: 1e12 });
  check(tooBig.kind === 'bad_params' && tooBig.path === '/bytes', `diag_blob of 1e12 bytes: error ${trunc(tooBig)}`);
  const own = await callError('diag_fail', { kind: 'not_found', message: 'no such key' });
  check(own.kind === 'not_found' && own.message === 'no such key', `diag_fail: error ${trunc(own)}`);

  step = 'diag_blob';
  const handle = await call('diag_blob', { bytes: BLOB_BYTES, seed: BLOB_SEED });
  check(typeof handle.result_id === 'string' && handle.result_id !== '',
    `diag_blob of ${BLOB_BYTES} bytes did not return a result handle: ${trunc(handle)}`);
  check(handle.read_tool === 'diag_result', `diag_blob handle names read_tool ${handle.read_tool}, want diag_result`);
  check(Number.isInteger(handle.total_bytes) && handle.total_bytes > 64 * 1024,
    `diag_blob handle total_bytes ${handle.total_bytes}`);

  step = 'diag_result paging';
  const chunkLen = Math.min(Number.isInteger(handle.chunk_bytes) && handle.chunk_bytes > 0 ? handle.chunk_bytes : MAX_CHUNK, MAX_CHUNK);
  const chunks = [];
  let offset = 0;
  let pages = 0;
  for (;;) {
    check(++pages <= 1000, 'diag_result paging did not end within 1000 pages');
    const page = await call('diag_result', { result_id: handle.result_id, offset, length: chunkLen });
    check(page.offset === offset, `diag_result page at ${offset} reports offset ${page.offset}`);
    check(page.total_bytes === handle.total_bytes, `diag_result total_bytes ${page.total_bytes}, handle said ${handle.total_bytes}`);
    const data = Buffer.from(page.data_base64, 'base64');
    check(data.length === page.bytes, `diag_result page at ${offset}: ${data.length} decoded bytes, bytes field ${page.bytes}`);
    chunks.push(data);
    offset += data.length;
    if (page.next_offset === null) break;
    check(page.next_offset === offset, `diag_result next_offset ${page.next_offset}, want ${offset}`);
  }
  const whole = Buffer.concat(chunks);
  check(whole.length === handle.total_bytes, `reassembled ${whole.length} bytes, total_bytes ${handle.total_bytes}`);
  let blob;
  try {
    blob = JSON.parse(whole.toString('utf8'));
  } catch (e) {
    throw new CheckError(`reassembled result is not JSON (${e.message}): ${trunc(whole.toString('utf8'), 200)}`);
  }
  const data = Buffer.from(blob.data_base64 ?? '', 'base64');
  check(blob.bytes === BLOB_BYTES && blob.seed === BLOB_SEED, `blob says bytes=${blob.bytes} seed=${blob.seed}`);
  check(data.length === BLOB_BYTES, `blob decodes to ${data.length} bytes, want ${BLOB_BYTES}`);
  const sum = createHash('sha256').update(data).digest('hex');
  check(sum === blob.sha256, `sha256 of the blob's data is ${sum}, its sha256 field ${blob.sha256}`);

  step = 'diag_result release';
  const rel = await call('diag_result', { result_id: handle.result_id, release: true });
  check(rel.released === true, `release reply: ${trunc(rel)}`);

  step = 'resources/read mcpkit://info';
  const rr = await client.readResource({ uri: 'mcpkit://info' }, { timeout: TIMEOUT_MS });
  const contents = rr.contents ?? [];
  check(contents.length > 0 && typeof contents[0].text === 'string', `mcpkit://info contents: ${trunc(contents)}`);
  const info = JSON.parse(contents[0].text);
  check(info.plugins?.[0]?.name === 'diag', `mcpkit://info plugins[0].name is ${info.plugins?.[0]?.name}, want diag`);
  check(info.results?.retained === 0, `mcpkit://info results after release: ${trunc(info.results)}, want retained 0`);

  step = 'close';
  await client.close();
  console.log(`PASS ${label}: protocol ${negotiated}, ${names.length} tools, echo ok, output schema and error kinds ok, blob ${BLOB_BYTES} bytes in ${pages} pages of ≤${chunkLen} (sha256 ${sum.slice(0, 12)}…), released, mcpkit://info plugins[0]=${info.plugins[0].name} version ${info.version}`);
}

try {
  await main();
  process.exit(0);
} catch (e) {
  const what = e instanceof CheckError ? e.message : (e?.stack ?? String(e));
  console.error(`FAIL ${label} at ${step}: ${what}`);
  if (e?.data !== undefined) console.error(`error data: ${trunc(e.data, 1000)}`);
  if (stderrText) console.error(`server stderr:\n${stderrText.slice(-4000)}`);
  try {
    await client?.close();
  } catch {
    // already failing
  }
  process.exit(1);
}
