// An OpenID provider for the tests: oidc-provider (an OpenID Certified
// implementation) on a loopback port chosen by the kernel. It prints one
// JSON line, {"issuer", "jwk"}: the issuer's URL and its signing key, the
// private half included, so a test can also sign tokens no provider would
// issue (expired, from another issuer) with the key the host trusts.
//
// Clients (client_credentials, secret "<id>-secret"):
//   agent   may get `tools:call profile`
//   other   may get `tools:call profile` (a second caller)
//   reader  may get `profile` only
// and `console`, the console's public client: authorization code with PKCE,
// no secret, coming back to /console/login/callback on any loopback port
// (a native client, RFC 8252 7.3). People sign in on the provider's own
// development pages: any login and password, then "Continue"; the login
// becomes the ID token's `sub`.
// Every resource indicator gets a JWT access token whose `aud` is that
// resource, valid for 300 seconds.
import http from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: 'provider-key-1', alg: 'RS256', use: 'sig' };

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
});

const provider = new Provider(issuer, {
  clients: [
    client('agent', 'tools:call profile'),
    client('other', 'tools:call profile'),
    client('reader', 'profile'),
    {
      client_id: 'console',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/console/login/callback'],
      scope: 'openid profile',
    },
  ],
  jwks: { keys: [jwk] },
  scopes: ['openid', 'offline_access', 'profile', 'tools:call'],
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'tools:call profile',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer, jwk })}\n`);
