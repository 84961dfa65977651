//! The authorization code flow with PKCE (S256), `state` and `nonce`
//! against the `[oidc]` provider, done by the `openidconnect` crate: a
//! sign-in begun here is remembered (bounded, ten minutes) under its
//! `state` with a binding that only the browser which began it holds (a
//! cookie); its end exchanges the code and verifies the ID token
//! (signature against the provider's JWKS, `iss`, `aud`, `exp`, `nonce`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet, EndpointSet,
    IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};

use super::settings::{OidcSettings, Roles};
use crate::reply::chain;

/// Where the provider sends the browser back.
pub const CALLBACK: &str = "/api/v1/login/oidc/callback";

/// Sign-ins begun and not yet ended, at most (the oldest goes first).
const PENDING_MAX: usize = 10_000;
/// Of them, begun from one address at most (its oldest goes first).
const PER_ADDRESS: usize = 32;
/// The longest session a sign-in starts, whatever the ID token says.
const SESSION_MAX: f64 = 12.0 * 3600.0;
/// How long a sign-in may take at the provider.
const PENDING_FOR: Duration = Duration::from_secs(600);
/// How long the provider's discovery document and keys are kept.
const METADATA_FOR: Duration = Duration::from_secs(300);

type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Single sign-on: the provider, the roles, the sign-ins in progress.
pub struct Sso {
    settings: OidcSettings,
    /// `[api] public_url`: how people reach this service.
    public_url: Option<String>,
    pub roles: Roles,
    http: reqwest::Client,
    metadata: tokio::sync::Mutex<Option<(Instant, CoreProviderMetadata)>>,
    pending: Mutex<HashMap<String, Pending>>,
}

struct Pending {
    binding: String,
    verifier: PkceCodeVerifier,
    nonce: Nonce,
    redirect: String,
    from: Option<std::net::IpAddr>,
    begun: Instant,
}

/// Who signed in: `oidc:<preferred_username>`, their groups, and when the
/// ID token (and so the session) ends (epoch seconds).
#[derive(Debug, Clone)]
pub struct Person {
    pub user: String,
    pub groups: Vec<String>,
    pub expires: f64,
}

/// Why a sign-in did not end in a session.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The request back from the provider does not belong to a sign-in
    /// this browser began (a forged or replayed `state`, a lost cookie).
    #[error("{0}")]
    Request(String),
    /// The provider could not be reached or answered wrongly.
    #[error("{0}")]
    Provider(String),
    /// The ID token did not verify.
    #[error("the ID token was refused: {0}")]
    Token(String),
    /// Signed in, but no `[roles]` group is theirs.
    #[error("{0}")]
    NoRole(String),
}

impl Sso {
    pub fn new(settings: OidcSettings, roles: Roles, public_url: Option<String>) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            // Never followed: a redirect could send the code elsewhere (SSRF).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| format!("the HTTP client for [oidc]: {e}"))?;
        Ok(Sso {
            settings,
            public_url,
            roles,
            http,
            metadata: tokio::sync::Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// The provider's discovery document and keys (kept a while).
    async fn metadata(&self, fresh: bool) -> Result<CoreProviderMetadata, Refused> {
        let mut kept = self.metadata.lock().await;
        if let (false, Some((at, m))) = (fresh, kept.as_ref()) {
            if at.elapsed() < METADATA_FOR {
                return Ok(m.clone());
            }
        }
        let issuer =
            IssuerUrl::new(self.settings.issuer.clone()).map_err(|e| Refused::Provider(e.to_string()))?;
        let found = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| {
                Refused::Provider(format!(
                    "discovery at {} failed: {}",
                    self.settings.issuer,
                    chain(&e)
                ))
            })?;
        // The secret goes to the token endpoint and the keys come from
        // the JWKS: neither may be plain http off loopback.
        let token = found.token_endpoint().map(|u| u.url().as_str().to_string());
        let jwks = found.jwks_uri().url().as_str().to_string();
        for url in token.iter().chain(std::iter::once(&jwks)) {
            super::settings::check_url(url)
                .map_err(|why| Refused::Provider(format!("the discovery document names {why}")))?;
        }
        *kept = Some((Instant::now(), found.clone()));
        Ok(found)
    }

    fn client(&self, metadata: CoreProviderMetadata, redirect: &str) -> Result<Client, Refused> {
        let redirect = RedirectUrl::new(redirect.to_string()).map_err(|e| Refused::Request(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(self.settings.client_secret.clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// Where this service asks the provider to send the browser back:
    /// `[oidc] redirect_url`, else below `[api] public_url`, else this
    /// service as the browser named it, but only by a name of this host
    /// (its host name, `localhost`, a loopback address): a Host header of
    /// another site's would let a loosely registered client send a
    /// person's code there.
    pub fn redirect_url(&self, host: Option<&str>) -> Option<String> {
        if let Some(url) = &self.settings.redirect_url {
            return Some(url.clone());
        }
        if let Some(base) = &self.public_url {
            return Some(format!("{}{}", base.trim_end_matches('/'), CALLBACK));
        }
        let host = host.filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })?;
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => host.rsplit_once(':').map_or(host, |(h, _)| h),
        };
        let this_host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok());
        let ours = name.eq_ignore_ascii_case("localhost")
            || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || this_host.is_some_and(|h| {
                h.eq_ignore_ascii_case(name)
                    || h.split('.').next().is_some_and(|s| s.eq_ignore_ascii_case(name))
            });
        ours.then(|| format!("https://{host}{}", CALLBACK))
    }

    /// Begins a sign-in that returns to `redirect`: the provider's URL to
    /// send the browser to, and the binding the browser must bring back.
    pub async fn begin(
        &self,
        redirect: String,
        from: Option<std::net::IpAddr>,
    ) -> Result<(String, String), Refused> {
        let client = self.client(self.metadata(false).await?, &redirect)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut asked = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in &self.settings.scopes {
            asked = asked.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = asked.set_pkce_challenge(challenge).url();
        let binding = CsrfToken::new_random().secret().clone();
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|_, p| p.begun.elapsed() < PENDING_FOR);
        // One address's sign-ins push out only its own oldest, so that
        // nobody can wipe the others' by beginning many.
        let mine: Vec<(String, Instant)> = pending
            .iter()
            .filter(|(_, p)| p.from == from)
            .map(|(k, p)| (k.clone(), p.begun))
            .collect();
        if mine.len() >= PER_ADDRESS {
            if let Some((oldest, _)) = mine.iter().min_by_key(|(_, at)| *at) {
                pending.remove(oldest);
            }
        }
        while pending.len() >= PENDING_MAX {
            let oldest = pending
                .iter()
                .min_by_key(|(_, p)| p.begun)
                .map(|(k, _)| k.clone());
            oldest.map(|k| pending.remove(&k));
        }
        pending.insert(
            state.secret().clone(),
            Pending {
                binding: binding.clone(),
                verifier,
                nonce,
                redirect,
                from,
                begun: Instant::now(),
            },
        );
        Ok((url.to_string(), binding))
    }

    /// Ends the sign-in `state` names, for the browser holding `binding`:
    /// the code exchanged, the ID token verified, the person's roles found.
    pub async fn end(
        &self,
        state: &str,
        code: &str,
        binding: Option<&str>,
    ) -> Result<(Person, Option<overlord::gate::rights::Rights>), Refused> {
        let begun = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            let Some(p) = pending.get(state).filter(|p| p.begun.elapsed() < PENDING_FOR) else {
                return Err(Refused::Request("no sign-in of this browser is waiting for that state (forged, used, or over ten minutes old): sign in again".into()));
            };
            // Compared in constant time (no byte of it told by timing),
            // before the sign-in is taken: one who learnt a state cannot
            // cancel another's sign-in.
            let same = binding.is_some_and(|b| {
                b.len() == p.binding.len()
                    && b.bytes().zip(p.binding.bytes()).fold(0, |d, (x, y)| d | (x ^ y)) == 0
            });
            if !same {
                return Err(Refused::Request(
                    "this sign-in was begun by another browser: sign in again".into(),
                ));
            }
            pending
                .remove(state)
                .ok_or_else(|| Refused::Request("this sign-in ended meanwhile".into()))?
        };
        let client = self.client(self.metadata(false).await?, &begun.redirect)?;
        let exchange = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| Refused::Provider(format!("the provider has no token endpoint: {e}")))?;
        let answer = exchange
            .set_pkce_verifier(begun.verifier)
            .request_async(&self.http)
            .await
            .map_err(|e| Refused::Provider(format!("the code exchange failed: {}", chain(&e))))?;
        let id_token = answer
            .id_token()
            .ok_or_else(|| Refused::Token("the provider sent no ID token".into()))?;
        let verified = match id_token.claims(&client.id_token_verifier(), &begun.nonce) {
            Ok(c) => c.clone(),
            // The provider may have rotated its keys: read them again once.
            Err(openidconnect::ClaimsVerificationError::SignatureVerification(_)) => {
                let client = self.client(self.metadata(true).await?, &begun.redirect)?;
                let verifier = client.id_token_verifier();
                let claims = id_token.claims(&verifier, &begun.nonce);
                claims.map_err(|e| Refused::Token(e.to_string()))?.clone()
            }
            Err(e) => return Err(Refused::Token(e.to_string())),
        };
        let name = verified
            .preferred_username()
            .map(|u| u.as_str().to_string())
            .unwrap_or_else(|| verified.subject().as_str().to_string());
        if name.is_empty()
            || name.len() > 128
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._@+-".contains(c))
        {
            return Err(Refused::Token(
                "its preferred_username is not a plain name (letters, digits, ._@+-, at most 128)".into(),
            ));
        }
        let groups = groups_of(&id_token.to_string(), &self.settings.groups_claim);
        let person = Person {
            user: format!("oidc:{name}"),
            groups,
            expires: (verified.expiration().timestamp() as f64).min(overlord::store::now() + SESSION_MAX),
        };
        let rights = self.roles.rights_of(&person.groups);
        Ok((person, rights))
    }
}

/// The `claim` of a verified ID token's payload as a list of group names
/// (a list of strings, or one string); none when absent or of another kind.
fn groups_of(jwt: &str, claim: &str) -> Vec<String> {
    use base64::Engine as _;
    let payload = jwt.split('.').nth(1).unwrap_or("");
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('='))
    else {
        return Vec::new();
    };
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    let groups: Vec<String> = match doc.get(claim) {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|g| g.as_str().map(str::to_string))
            .collect(),
        Some(serde_json::Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    };
    // A provider's list is data: bounded, and plain text only.
    groups
        .into_iter()
        .filter(|g| g.len() <= 256 && !g.chars().any(char::is_control))
        .take(1_000)
        .collect()
}
