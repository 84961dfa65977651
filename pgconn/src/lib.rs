//! Connecting to the shared PostgreSQL store (DESIGN §15), for the
//! overlord's job store and the certmaster's minion list alike: `[store]
//! url` in libpq's forms (`postgresql://user:pw@host:port/db?sslmode=…`,
//! `?host=/run/postgresql` for a Unix socket, or `key=value` words), the
//! password from the URL, `PGPASSFILE` or `~/.pgpass` (used only if 0600,
//! as libpq), and TLS with rustls per `sslmode` (`disable`, `prefer` — which
//! is plain here —, `require`, `verify-ca`, `verify-full`, with
//! `sslrootcert=FILE`, else the system's roots are not used: name a file).
//! The URL is never shown with its password: [`StoreUrl::shown`].
//!
//! The minion list shared by the certmaster and every overlord is here too
//! ([`sync_minions`], [`minions`]), since both sides use it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A store URL, parsed.
#[derive(Clone)]
pub struct StoreUrl {
    config: postgres::Config,
    ssl: SslMode,
    root_cert: Option<PathBuf>,
    shown: String,
    /// The URL as configured (it may hold a password: never shown).
    text: String,
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SslMode {
    Disable,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Why the store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("bad [store] url: {0}")]
    Url(String),
    #[error("job store {store}: {message}")]
    Unavailable { store: String, message: String },
    #[error("job store {store}: {message}")]
    Query { store: String, message: String },
}

impl PgError {
    /// Whether trying again later may work (the server is down or restarting).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, PgError::Unavailable { .. })
    }
}

impl StoreUrl {
    /// Parses `url` (never echoed whole in an error: it may hold a password).
    pub fn parse(url: &str) -> Result<Self, PgError> {
        let mut ssl = None;
        let mut root_cert = None;
        // sslrootcert and sslmode are taken here (rust-postgres knows only
        // some modes); the rest goes to its parser.
        let (base, query) = match url.split_once('?') {
            Some((b, q)) if url.starts_with("postgres") => (b.to_string(), Some(q.to_string())),
            _ => (url.to_string(), None),
        };
        let mut rest = Vec::new();
        if let Some(q) = query {
            for pair in q.split('&').filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some(("sslmode", v)) => ssl = Some(v.to_string()),
                    Some(("sslrootcert", v)) => root_cert = Some(PathBuf::from(percent_decode(v))),
                    _ => rest.push(pair.to_string()),
                }
            }
        }
        let mut text = if rest.is_empty() {
            base
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        if !text.starts_with("postgres") {
            // key=value words: take sslmode / sslrootcert out the same way.
            let mut words = Vec::new();
            for w in text.split_whitespace() {
                match w.split_once('=') {
                    Some(("sslmode", v)) => ssl = Some(v.to_string()),
                    Some(("sslrootcert", v)) => root_cert = Some(PathBuf::from(v)),
                    _ => words.push(w.to_string()),
                }
            }
            text = words.join(" ");
        }
        let config: postgres::Config = text
            .parse()
            .map_err(|e: postgres::Error| PgError::Url(e.to_string()))?;
        let ssl = match ssl.as_deref() {
            None | Some("disable") | Some("allow") | Some("prefer") => SslMode::Disable,
            Some("require") => SslMode::Require,
            Some("verify-ca") => SslMode::VerifyCa,
            Some("verify-full") => SslMode::VerifyFull,
            Some(other) => return Err(PgError::Url(format!("unknown sslmode {other:?}"))),
        };
        let shown = shown(&config);
        let mut url = StoreUrl {
            config,
            ssl,
            root_cert,
            shown,
            text: url.to_string(),
        };
        if url.config.get_password().is_none() {
            if let Some(pw) = pgpass_password(&url.config) {
                url.config.password(pw);
            }
        }
        url.config.connect_timeout(CONNECT_TIMEOUT);
        // The idempotent schema statements ("already exists, skipping")
        // are not news worth a log line on every start.
        if url.config.get_options().is_none() {
            url.config.options("-c client_min_messages=warning");
        }
        if url.config.get_application_name().is_none() {
            url.config.application_name("func");
        }
        Ok(url)
    }

    /// The URL as configured, for a child process that must use this very
    /// store (handed over a pipe, never an argument or a log: it may hold
    /// a password).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The store as people may see it: `postgresql://user@host:port/db`, never a password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection.
    pub fn connect(&self) -> Result<postgres::Client, PgError> {
        let unavailable = |e: postgres::Error| PgError::Unavailable {
            store: self.shown.clone(),
            message: describe(&e),
        };
        // A Unix socket carries no TLS (libpq ignores sslmode there).
        let local = self
            .config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, postgres::config::Host::Unix(_)));
        match self.ssl {
            SslMode::Disable => self.config.connect(postgres::NoTls).map_err(unavailable),
            _ if local => self.config.connect(postgres::NoTls).map_err(unavailable),
            mode => {
                // These modes never go on without TLS, so a password is
                // never sent in clear: a server (or anyone on the path)
                // answering the TLS request with "no" ends the attempt, as
                // libpq does. rust-postgres would otherwise "prefer".
                let mut config = self.config.clone();
                config.ssl_mode(postgres::config::SslMode::Require);
                let tls = tls_config(mode, self.root_cert.as_deref()).map_err(|m| PgError::Unavailable {
                    store: self.shown.clone(),
                    message: m,
                })?;
                let connector = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
                config.connect(connector).map_err(unavailable)
            }
        }
    }

    /// A query's error, named by the store.
    pub fn error(&self, e: postgres::Error) -> PgError {
        // Connection exceptions (08…), and the server shutting down or
        // starting (57P01–57P03): try again later.
        let transient = e
            .code()
            .is_some_and(|c| c.code().starts_with("08") || matches!(c.code(), "57P01" | "57P02" | "57P03"));
        if e.is_closed() || e.as_db_error().is_none() || transient {
            PgError::Unavailable {
                store: self.shown.clone(),
                message: describe(&e),
            }
        } else {
            PgError::Query {
                store: self.shown.clone(),
                message: describe(&e),
            }
        }
    }
}

/// An error's text with its cause (rust-postgres puts the useful part there).
fn describe(e: &postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) if !e.to_string().contains(&cause.to_string()) => format!("{e}: {cause}"),
        _ => e.to_string(),
    }
}

fn shown(config: &postgres::Config) -> String {
    let user = config.get_user().unwrap_or("");
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or(user);
    let at = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    format!("postgresql://{at}{host}:{port}/{db}")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 3 <= bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The password for `config` from `PGPASSFILE` or `~/.pgpass` (libpq's
/// format: `host:port:db:user:password`, `*` matches anything, `\` escapes),
/// read only if the file is 0600 or stricter, as libpq does.
fn pgpass_password(config: &postgres::Config) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(_)) | None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().unwrap_or("").to_string();
    let db = config
        .get_dbname()
        .map(str::to_string)
        .unwrap_or_else(|| user.clone());
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        let want = [&host, &port, &db, &user];
        if fields[..4].iter().zip(want).all(|(f, w)| f == "*" || f == w) {
            return Some(fields[4].clone());
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    if let Some(f) = fields.last_mut() {
                        f.push(n);
                    }
                }
            }
            ':' => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

fn tls_config(mode: SslMode, root: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let roots = || -> Result<rustls::RootCertStore, String> {
        let path = root.ok_or("sslmode verify-ca / verify-full need sslrootcert=FILE in the URL")?;
        let mut store = rustls::RootCertStore::empty();
        for cert in common::tls::load_certs(path, "sslrootcert").map_err(|e| e.to_string())? {
            store.add(cert).map_err(|e| e.to_string())?;
        }
        Ok(store)
    };
    Ok(match mode {
        SslMode::VerifyFull => builder.with_root_certificates(roots()?).with_no_client_auth(),
        SslMode::VerifyCa => {
            let chain = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots()?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| e.to_string())?;
            let lenient = Lenient {
                chain: Some(chain),
                provider,
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(lenient))
                .with_no_client_auth()
        }
        // require: encrypted; the certificate is checked only if a root is named (libpq's rule).
        _ => match root {
            Some(_) => builder.with_root_certificates(roots()?).with_no_client_auth(),
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Lenient {
                    chain: None,
                    provider,
                }))
                .with_no_client_auth(),
        },
    })
}

/// The two libpq modes rustls has no name for. verify-ca (`chain: Some`):
/// the chain is checked, the host name is not. require without a root
/// (`chain: None`): encrypted, the certificate not checked. Signatures are
/// always checked with the provider's algorithms.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &rustls_pki_types::CertificateDer<'_>,
        intermediates: &[rustls_pki_types::CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
        let Some(chain) = &self.chain else {
            return Ok(rustls::client::danger::ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(NotValidForName | NotValidForNameContext { .. })) => {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The minion list's table (the job tables are the overlord's: its store
/// creates them). Idempotent.
pub const MINIONS_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS func_minions (
    name text PRIMARY KEY,
    address text,
    revoked boolean NOT NULL DEFAULT false,
    updated double precision NOT NULL
)";

/// Makes the store's minion list what the certmaster's files say: every
/// signed minion with its address, and any name no longer signed marked
/// revoked. One transaction.
pub fn sync_minions(url: &StoreUrl, signed: &[(String, Option<String>)]) -> Result<(), PgError> {
    let mut client = url.connect()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let run = |client: &mut postgres::Client| -> Result<(), postgres::Error> {
        client.batch_execute(MINIONS_SCHEMA)?;
        let mut txn = client.transaction()?;
        let names: Vec<&str> = signed.iter().map(|(n, _)| n.as_str()).collect();
        let addrs: Vec<Option<&str>> = signed.iter().map(|(_, a)| a.as_deref()).collect();
        txn.execute(
            "INSERT INTO func_minions (name, address, revoked, updated)
             SELECT n, a, false, $3 FROM unnest($1::text[], $2::text[]) AS t(n, a)
             ON CONFLICT (name) DO UPDATE SET address = EXCLUDED.address, revoked = false, updated = $3
             WHERE func_minions.address IS DISTINCT FROM EXCLUDED.address OR func_minions.revoked",
            &[&names, &addrs, &now],
        )?;
        txn.execute(
            "UPDATE func_minions SET revoked = true, updated = $2 WHERE NOT revoked AND NOT (name = ANY($1))",
            &[&names, &now],
        )?;
        txn.commit()
    };
    run(&mut client).map_err(|e| url.error(e))
}

/// The shared minion list kept up to date a few minions at a time, over
/// one kept connection (the certmaster signing many minions a second).
pub struct MinionMirror {
    url: StoreUrl,
    client: std::sync::Mutex<Option<postgres::Client>>,
}

impl MinionMirror {
    pub fn new(url: StoreUrl) -> Self {
        Self {
            url,
            client: std::sync::Mutex::new(None),
        }
    }

    /// Lists `rows` (name, address) as signed (added, or their address changed).
    pub fn upsert(&self, rows: &[(String, Option<String>)]) -> Result<(), PgError> {
        let mut kept = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let mut client = match kept.take() {
            Some(c) if !c.is_closed() => c,
            _ => {
                let mut c = self.url.connect()?;
                c.batch_execute(MINIONS_SCHEMA).map_err(|e| self.url.error(e))?;
                c
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        let addrs: Vec<Option<&str>> = rows.iter().map(|(_, a)| a.as_deref()).collect();
        client
            .execute(
                "INSERT INTO func_minions (name, address, revoked, updated)
                 SELECT n, a, false, $3 FROM unnest($1::text[], $2::text[]) AS t(n, a)
                 ON CONFLICT (name) DO UPDATE SET address = EXCLUDED.address, revoked = false, updated = $3
                 WHERE func_minions.address IS DISTINCT FROM EXCLUDED.address OR func_minions.revoked",
                &[&names, &addrs, &now],
            )
            .map_err(|e| self.url.error(e))?;
        *kept = Some(client);
        Ok(())
    }
}

/// The CA's newest CRL (DESIGN §9: revocation is by serial, and every
/// overlord honours the newest CRL it has, local or shared). One row. The
/// CRL is signed by the CA, so the store can withhold a newer one but not
/// forge one: readers check its signature.
pub const CRL_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS func_crl (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    number text NOT NULL,
    pem text NOT NULL,
    updated double precision NOT NULL
)";

/// Publishes `pem` (CRL number `number`) unless the store holds a newer one.
pub fn publish_crl(url: &StoreUrl, pem: &str, number: u128) -> Result<(), PgError> {
    let mut client = url.connect()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let run = |client: &mut postgres::Client| -> Result<(), postgres::Error> {
        client.batch_execute(CRL_SCHEMA)?;
        let mut txn = client.transaction()?;
        let held: Option<String> = txn
            .query_opt("SELECT number FROM func_crl WHERE one FOR UPDATE", &[])?
            .map(|r| r.get(0));
        if held
            .and_then(|n| n.parse::<u128>().ok())
            .is_some_and(|n| n >= number)
        {
            return txn.commit();
        }
        txn.execute(
            "INSERT INTO func_crl (one, number, pem, updated) VALUES (true, $1, $2, $3)
             ON CONFLICT (one) DO UPDATE SET number = EXCLUDED.number, pem = EXCLUDED.pem, updated = EXCLUDED.updated",
            &[&number.to_string(), &pem, &now],
        )?;
        txn.commit()
    };
    run(&mut client).map_err(|e| url.error(e))
}

/// The CRL the store holds (PEM), if any.
pub fn shared_crl(url: &StoreUrl) -> Result<Option<String>, PgError> {
    let mut client = url.connect()?;
    client
        .query_opt("SELECT pem FROM func_crl WHERE one", &[])
        .map(|row| row.map(|r| r.get(0)))
        .or_else(|e| match e.code() {
            Some(&postgres::error::SqlState::UNDEFINED_TABLE) => Ok(None),
            _ => Err(e),
        })
        .map_err(|e| url.error(e))
}

/// The minions the store lists as signed, with their addresses.
pub fn minions(url: &StoreUrl) -> Result<Vec<(String, Option<String>)>, PgError> {
    let mut client = url.connect()?;
    let rows = client
        .query(
            "SELECT name, address FROM func_minions WHERE NOT revoked ORDER BY name",
            &[],
        )
        .or_else(|e| match e.code() {
            // No certmaster has written the list yet.
            Some(&postgres::error::SqlState::UNDEFINED_TABLE) => Ok(Vec::new()),
            _ => Err(e),
        })
        .map_err(|e| url.error(e))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_never_shown_with_their_password() {
        let u = StoreUrl::parse(
            "postgresql://func:s3cret@db.example:6543/jobs?sslmode=require&application_name=x",
        )
        .unwrap();
        assert_eq!(u.shown(), "postgresql://func@db.example:6543/jobs");
        assert!(!format!("{u:?}").contains("s3cret"));
        let u = StoreUrl::parse("postgresql:///jobs?host=/run/postgresql&user=func").unwrap();
        assert_eq!(u.shown(), "postgresql://func@/run/postgresql:5432/jobs");
        let u = StoreUrl::parse("host=/tmp port=5433 dbname=f user=u").unwrap();
        assert_eq!(u.shown(), "postgresql://u@/tmp:5433/f");
        let e = StoreUrl::parse("postgresql://u:pw@h/db?sslmode=bogus").unwrap_err();
        assert!(!e.to_string().contains("pw"));
        assert!(StoreUrl::parse("postgresql://u:pw@h/db?sslmode=verify-full").is_ok());
    }

    /// A fake server that refuses TLS ("N") and then asks for a cleartext
    /// password; it reports what it was sent after the refusal.
    fn fake_server_refusing_tls() -> (u16, std::thread::JoinHandle<(bool, bool)>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut head = [0u8; 8];
            s.read_exact(&mut head).unwrap();
            // SSLRequest: length 8, code 80877103.
            assert_eq!(&head[4..], &80877103u32.to_be_bytes());
            s.write_all(b"N").unwrap();
            // Whatever follows: a startup message, then (after our
            // AuthenticationCleartextPassword) a password message 'p'.
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return (false, false);
            }
            let mut rest = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4).min(1 << 16)];
            let _ = s.read_exact(&mut rest);
            let _ = s.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]);
            let mut tag = [0u8; 1];
            let password = s.read_exact(&mut tag).is_ok() && tag[0] == b'p';
            (true, password)
        });
        (port, server)
    }

    #[test]
    fn tls_modes_never_fall_back_to_plaintext_nor_send_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("db-ca.pem");
        std::fs::write(&root, FAKE_DB_CA).unwrap();
        for mode in ["require", "verify-ca", "verify-full"] {
            let (port, server) = fake_server_refusing_tls();
            let url = StoreUrl::parse(&format!(
                "postgresql://func:s3cret@127.0.0.1:{port}/func?sslmode={mode}&sslrootcert={}",
                root.display()
            ))
            .unwrap();
            let err = url
                .connect()
                .err()
                .unwrap_or_else(|| panic!("{mode}: connected in plaintext"));
            assert!(err.is_unavailable(), "{mode}: {err}");
            assert!(!err.to_string().contains("s3cret"));
            let (startup, password) = server.join().unwrap();
            assert!(
                !startup,
                "{mode}: went on in plaintext after the server refused TLS"
            );
            assert!(!password, "{mode}: sent the password in clear");
        }
    }

    const FAKE_DB_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBgTCCASegAwIBAgIUJyapS1DbvadTf/EDm70sE+FZFwMwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKZmFrZS1kYi1jYTAgFw0yNjExMjUyMTQ5NTRaGA8yMTI2MTEw
MTIxNDk1NFowFTETMBEGA1UEAwwKZmFrZS1kYi1jYTBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABDNg98Vv4SMAk5imdDUvZV9UMgBfA0lh0L29lJzeX6XfhV3fcFWE
9ODddMPc8tArCVwFIG+xRXKgpnw2KdmBZfqjUzBRMB0GA1UdDgQWBBR+2Zam6e76
DH59s9liGtBEaMF2jjAfBgNVHSMEGDAWgBR+2Zam6e76DH59s9liGtBEaMF2jjAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIAY9bzmU6cODkBixK461
cRAgx+fLdDk93XyqCxxdE7yZAiEAlmJlq8oaHNjg+XqDHI7N6r4+ZGpu8G1HCy/c
LDAxJWg=
-----END CERTIFICATE-----
";

    #[test]
    fn pgpass_lines_split_with_escapes() {
        assert_eq!(split_pgpass(r"h:5432:*:u:p\:w"), ["h", "5432", "*", "u", "p:w"]);
    }
}
