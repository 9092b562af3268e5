// The TypeScript SDK client's OAuth provider (@modelcontextprotocol/sdk
// 1.x) against bin/mcpkit serving the example app with OAuth, driven by
// test/e2e_oauth_interop_test.go (TestOAuthTypeScriptClient):
//
//   node oauth.mjs --url http://127.0.0.1:PORT/mcp --email E --password P
//
// The client meets /mcp's 401, discovers, registers and is sent to the
// authorize page; this script plays the user there (the page's CSRF token
// and cookie, the sign-up form), hands the code to finishAuth, reconnects
// and posts a message as that user. It prints "PASS author=NAME" and exits
// 0, or prints what failed and exits 1.

import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const { values: opts } = parseArgs({
  options: { url: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' } },
});
const REDIRECT = 'http://127.0.0.1:1/callback'; // never reached: the script stops at the redirect

// signOn plays the browser: the authorize page, then its sign-up form.
async function signOn(authorizationUrl) {
  const page = await fetch(authorizationUrl, { redirect: 'manual' });
  if (page.status !== 200) throw new Error(`authorize page: ${page.status} ${await page.text()}`);
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const form = new URLSearchParams();
  for (const m of (await page.text()).matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) {
    form.set(m[1], m[2].replaceAll('&amp;', '&'));
  }
  form.set('mode', 'signup');
  form.set('name', 'Tess');
  form.set('email', opts.email);
  form.set('password', opts.password);
  const origin = new URL(authorizationUrl).origin;
  const post = await fetch(origin + '/oauth/authorize', {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
  });
  if (post.status !== 302) throw new Error(`sign-up: ${post.status} ${await post.text()}`);
  const back = new URL(post.headers.get('location'));
  if (back.searchParams.get('iss') !== origin) throw new Error(`redirect without the issuer: ${back}`);
  return back.searchParams.get('code');
}

let client, tokens, verifier, code;
const provider = {
  get redirectUrl() { return REDIRECT; },
  get clientMetadata() {
    return { redirect_uris: [REDIRECT], client_name: 'ts-sdk e2e', token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };
  },
  clientInformation() { return client; },
  saveClientInformation(info) { client = info; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  async redirectToAuthorization(url) { code = await signOn(url.toString()); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

async function main() {
  const url = new URL(opts.url);
  let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const first = new Client({ name: 'ts-oauth', version: '0' });
  try {
    await first.connect(transport);
    throw new Error('connected without signing in');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  if (!code) throw new Error('the provider was never sent to the authorize page');
  await transport.finishAuth(code);
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const mcp = new Client({ name: 'ts-oauth', version: '0' });
  await mcp.connect(transport);
  const res = await mcp.callTool({ name: 'message-post', arguments: { channel: 'general', text: 'from ts' } });
  if (res.isError) throw new Error(`message-post: ${JSON.stringify(res.content)}`);
  const msg = JSON.parse(res.content[0].text);
  await mcp.close();
  console.log(`PASS author=${msg.author} user=${msg.user_id}`);
}

main().catch((e) => {
  console.log(`FAIL ${e?.stack ?? e}`);
  process.exit(1);
});
