//! `[oidc]` and `[roles]` in overlord.conf: single sign-on through an
//! OpenID Connect provider, and the rights each of its groups gives.
//!
//! ```ini
//! [oidc]
//! issuer = https://sso.example.org/realms/ops
//! client_id = func-api
//! client_secret_file = etc/func/oidc.secret
//! # groups_claim = groups, scopes = openid profile, redirect_url = https://func.example.org/api/v1/login/oidc/callback
//!
//! [roles]
//! ops = admin
//! web-team = web*=test.*,service.* web*=@keys.*
//! ```
//!
//! A group's value is `admin`, or rules in the token syntax (`SPEC=GLOB,…`)
//! separated by spaces; a person in several groups has the union. Group
//! names are compared without case (overlord.conf's keys are read so).

use std::collections::BTreeMap;

use common::paths::Root;
use overlord::gate::rights::{Rights, Rule};

/// The provider and this service's registration with it.
#[derive(Clone)]
pub struct OidcSettings {
    /// The issuer (`https://…`; `http://` only on loopback).
    pub issuer: String,
    pub client_id: String,
    /// Never logged or shown (`Debug` leaves it out).
    pub client_secret: String,
    /// The ID token's claim that lists the person's groups.
    pub groups_claim: String,
    /// Scopes asked for besides `openid`.
    pub scopes: Vec<String>,
    /// Where the provider sends the browser back; by default this
    /// service's own address as the browser named it.
    pub redirect_url: Option<String>,
}

impl std::fmt::Debug for OidcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("groups_claim", &self.groups_claim)
            .finish_non_exhaustive()
    }
}

/// `[roles]`: group (lower case) → what it gives.
#[derive(Debug, Clone, Default)]
pub struct Roles {
    groups: BTreeMap<String, Rights>,
}

impl Roles {
    /// What a person in `groups` may do: the union of its mapped groups';
    /// `None` when none of them is mapped (no session).
    pub fn rights_of(&self, groups: &[String]) -> Option<Rights> {
        let mut rights = Rights {
            admin: false,
            rules: Vec::new(),
        };
        let mut mapped = false;
        for g in groups {
            if let Some(r) = self.groups.get(&g.to_ascii_lowercase()) {
                mapped = true;
                rights.admin |= r.admin;
                rights.rules.extend(r.rules.iter().cloned());
            }
        }
        if rights.admin {
            rights.rules.clear();
        }
        mapped.then_some(rights)
    }
}

/// `[oidc]` and `[roles]` below `root`: `None` when `[oidc] issuer` is not
/// set; a value that cannot be used is an error naming it.
pub fn load(root: &Root) -> Result<Option<(OidcSettings, Roles)>, String> {
    let conf = overlord::conf::OverlordConf::of(root).map_err(|e| e.to_string())?;
    let ini = &conf.ini;
    let file = root.overlord_conf();
    let bad = |key: &str, why: &str| format!("{}: [oidc] {key}: {why}", file.display());
    let Some(issuer) = ini
        .str("oidc", "issuer")
        .map(|s| s.trim_end_matches('/').to_string())
    else {
        return Ok(None);
    };
    check_issuer(&issuer).map_err(|why| bad("issuer", &why))?;
    let client_id = ini
        .str("oidc", "client_id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("client_id", "needed with issuer"))?
        .to_string();
    let given = (
        ini.str("oidc", "client_secret"),
        ini.str("oidc", "client_secret_file"),
    );
    let client_secret = crate::config::secret(root, "client_secret", given.0, given.1)
        .map_err(|why| bad("client_secret", &why))?
        .ok_or_else(|| bad("client_secret", "needed with issuer (or client_secret_file)"))?;
    if client_secret.is_empty() {
        return Err(bad("client_secret", "empty"));
    }
    let redirect_url = ini.str("oidc", "redirect_url").map(str::to_string);
    if let Some(url) = &redirect_url {
        if !url.starts_with("https://") {
            return Err(bad(
                "redirect_url",
                "must be https:// (func-api serves HTTPS only)",
            ));
        }
    }
    let settings = OidcSettings {
        issuer,
        client_id,
        client_secret,
        groups_claim: ini.str("oidc", "groups_claim").unwrap_or("groups").to_string(),
        scopes: ini
            .str("oidc", "scopes")
            .unwrap_or("openid profile")
            .split([' ', ','])
            .filter(|s| !s.is_empty() && *s != "openid")
            .map(str::to_string)
            .collect(),
        redirect_url,
    };
    let mut roles = Roles::default();
    for (group, value) in ini.section("roles").into_iter().flatten() {
        let rights =
            parse_role(value).map_err(|why| format!("{}: [roles] {group}: {why}", file.display()))?;
        roles.groups.insert(group.to_ascii_lowercase(), rights);
    }
    if roles.groups.is_empty() {
        return Err(format!(
            "{}: [oidc] is on but [roles] maps no group: nobody could sign in",
            file.display()
        ));
    }
    Ok(Some((settings, roles)))
}

/// `admin`, or rules separated by spaces.
fn parse_role(value: &str) -> Result<Rights, String> {
    if value.trim().eq_ignore_ascii_case("admin") {
        return Ok(Rights::admin());
    }
    let rules = value
        .split_whitespace()
        .map(Rule::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if rules.is_empty() {
        return Err("expected admin or SPEC=METHOD_GLOB[,METHOD_GLOB…] rules".into());
    }
    Ok(Rights { admin: false, rules })
}

/// An issuer is `https://`, or `http://` on loopback only (a provider run
/// beside the service for tests): anything else would let the network
/// forge sign-ins.
pub fn check_issuer(issuer: &str) -> Result<(), String> {
    check_url(issuer)
}

/// A URL func-api sends to or trusts: `https://`, or `http://` on loopback
/// only (the network could read or forge anything else).
pub fn check_url(issuer: &str) -> Result<(), String> {
    if issuer.starts_with("https://") {
        return Ok(());
    }
    let Some(rest) = issuer.strip_prefix("http://") else {
        return Err(format!("{issuer:?}: expected an https:// URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // `http://127.0.0.1@evil.org` is evil.org's.
    if authority.contains('@') {
        return Err(format!("{issuer:?}: a URL with user information is refused"));
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match loopback {
        true => Ok(()),
        false => Err(format!(
            "{issuer:?}: an http:// URL is refused except on loopback (use https://)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_issuers_only_on_loopback() {
        assert!(check_issuer("https://sso.example.org/realms/a").is_ok());
        assert!(check_issuer("http://localhost:8080").is_ok());
        assert!(check_issuer("http://127.0.0.1:9/x").is_ok());
        assert!(check_issuer("http://[::1]:9").is_ok());
        assert!(check_issuer("http://sso.example.org").is_err());
        assert!(check_issuer("http://localhost.evil.org").is_err());
        assert!(check_issuer("http://10.0.0.1:80").is_err());
        assert!(check_issuer("ftp://localhost").is_err());
        assert!(check_issuer("http://127.0.0.1:80@evil.com/").is_err());
        assert!(check_issuer("http://[::1]@evil.com").is_err());
    }

    #[test]
    fn roles_give_the_union_of_mapped_groups() {
        let mut roles = Roles::default();
        roles
            .groups
            .insert("web".into(), parse_role("web*=test.*").unwrap());
        roles
            .groups
            .insert("db".into(), parse_role("db*=service.* db*=test.ping").unwrap());
        roles.groups.insert("ops".into(), parse_role("admin").unwrap());
        assert!(roles.rights_of(&["nobody".into()]).is_none());
        let both = roles.rights_of(&["Web".into(), "db".into()]).unwrap();
        assert!(!both.admin);
        assert_eq!(both.rules.len(), 3);
        assert!(roles.rights_of(&["web".into(), "ops".into()]).unwrap().admin);
        assert!(parse_role("nonsense").is_err());
    }
}
