// The OpenID provider tests/tests/oidc.rs signs in with: the `oidc-provider` package (a certified OpenID provider)
// on 127.0.0.1 over HTTPS, with static test accounts and an interaction that logs in the account the authorization
// request names in `login_hint` and grants what is asked, so a test drives the real authorization-code flow over HTTP.
//
// Environment: CERT and KEY (PEM files of the serving certificate), ID_TOKEN_TTL (seconds, default 3600),
// ISSUER_HOST (the issuer URL's host, default 127.0.0.1; it listens on 127.0.0.1 whatever the name).
// Prints `listening https://127.0.0.1:PORT` once it serves. Test-only endpoints:
//   POST /test/rotate  the provider signs with a new key (a new kid) from now on; its JWKS has only the new key.
//   POST /test/forge   body: a JSON payload; answers a JWT of it signed by a key the provider never published,
//                      with the provider's current kid in its header.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';

import { SignJWT, importJWK } from 'jose';
import Provider from 'oidc-provider';

const accounts = {
  alice: { email: 'alice@example.com', email_verified: true, groups: ['developers', 'admins'], tenant: 'acme' },
  bob: { email: 'bob@example.com', email_verified: false, groups: ['developers'], tenant: 'acme' },
  carol: { email: 'carol@example.com', email_verified: true, groups: ['auditors'] },
  // Claims a tenant's issuer must not be able to turn into power: system groups, another tenant, a system user.
  mallory: { email: 'mallory@example.com', email_verified: true, groups: ['developers', 'system:masters', 'system:nodes'], tenant: 'beta' },
  root: { email: 'system:admin', email_verified: true, groups: ['admins'] },
};

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

const ttl = Number(process.env.ID_TOKEN_TTL || 3600);
let signingKey = newKey();
const foreignKey = newKey();
let provider;

function makeProvider(issuer) {
  const made = new Provider(issuer, {
    clients: ['kspaces', 'other'].map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      redirect_uris: ['https://127.0.0.1/callback'],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    })),
    jwks: { keys: [signingKey] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'], tenant: ['tenant'] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: { IdToken: () => ttl, AccessToken: 3600, AuthorizationCode: 60, Grant: 3600, Interaction: 600, Session: 3600 },
    cookies: { keys: ['kspaces-test-cookie-key'] },
    async findAccount(ctx, id) {
      const claims = accounts[id];
      if (!claims) return undefined;
      return { accountId: id, async claims() { return { sub: id, ...claims }; } };
    },
  });
  made.on('server_error', (ctx, err) => console.error('oidc-provider server_error', err));
  return made;
}

// Logs in the account named by `login_hint`, then grants every scope and claim asked for.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const accountId = params.login_hint;
    if (!accounts[accountId]) {
      res.statusCode = 400;
      res.end(`unknown login_hint ${accountId}`);
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

async function forge(req, res) {
  const payload = JSON.parse(await body(req));
  const key = await importJWK(foreignKey, 'RS256');
  const token = await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: signingKey.kid }).sign(key);
  res.end(token);
}

const server = https.createServer({ cert: readFileSync(process.env.CERT), key: readFileSync(process.env.KEY) }, async (req, res) => {
  try {
    if (req.url.startsWith('/interaction/')) return await interaction(req, res);
    if (req.method === 'POST' && req.url === '/test/rotate') {
      signingKey = newKey();
      provider = makeProvider(provider.issuer);
      return res.end(signingKey.kid);
    }
    if (req.method === 'POST' && req.url === '/test/forge') return await forge(req, res);
    return provider.callback()(req, res);
  } catch (err) {
    console.error(err);
    res.statusCode = 500;
    res.end(String(err));
  }
});

server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  const issuer = `https://${process.env.ISSUER_HOST || '127.0.0.1'}:${server.address().port}`;
  provider = makeProvider(issuer);
  console.log(`listening ${issuer}`);
});
