// An OpenID provider on loopback for func-api's single sign-on tests:
// oauth2-mock-server (discovery, JWKS, authorization code flow with PKCE
// S256 checked, nonce carried into the ID token), started and stopped by
// tests/python/test_sso.py. Usage: node idp.mjs PERSON_JSON
//
// The ID token it signs is shaped by PERSON_JSON, read at each token:
// {"preferred_username", "groups", "nonce" (overrides the real one),
//  "exp_in" (seconds from now; negative: already expired), "aud"}.
// It prints "issuer URL" on its first line once it listens.
import { readFileSync } from 'node:fs';
import { OAuth2Server } from 'oauth2-mock-server';

const personFile = process.argv[2];
const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
server.service.on('beforeTokenSigning', (token) => {
  const p = token.payload;
  // The ID token: its audience is the client; the access token has a scope.
  if (!('aud' in p) || 'scope' in p) return;
  const person = JSON.parse(readFileSync(personFile, 'utf8'));
  if (person.preferred_username !== undefined) p.preferred_username = person.preferred_username;
  if (person.groups !== undefined) p.groups = person.groups;
  if (person.nonce !== undefined) p.nonce = person.nonce;
  if (person.aud !== undefined) p.aud = person.aud;
  if (person.exp_in !== undefined) {
    const now = Math.floor(Date.now() / 1000);
    p.exp = now + person.exp_in;
    if (person.exp_in < 0) { p.iat = now + person.exp_in - 60; p.nbf = p.iat; }
  }
});
await server.start(0, '127.0.0.1');
console.log('issuer ' + server.issuer.url);
const stop = async () => { await server.stop(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
