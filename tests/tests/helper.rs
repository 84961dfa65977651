//! Helpers for the integration tests: a started minion with its PKI, a
//! runtime, an overlord client, and raw TLS connections for hostile input.

use std::sync::Arc;
use std::time::Duration;

use common::paths::Root;
use common::rpc::client::{CallError, MinionClient};
use common::Value;
use func_tests::fixture::{write_file, FuncdProcess, Pki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A PKI plus one running minion; both cleaned up on drop.
pub struct OneMinion {
    pub minion: FuncdProcess,
    pub pki: Pki,
    pub root: Root,
    pub rt: tokio::runtime::Runtime,
}

impl OneMinion {
    pub fn start(name: &str) -> Self {
        Self::start_with(name, "", "")
    }

    /// Starts with extra `[main]` lines in minion.conf and an optional ACL file.
    pub fn start_with(name: &str, conf: &str, acl: &str) -> Self {
        let pki = Pki::new();
        let root = pki.minion_root(name);
        if !conf.is_empty() {
            write_file(&root.minion_conf(), &format!("[main]\n{conf}\n"));
        }
        if !acl.is_empty() {
            write_file(&root.acl_dir().join("test.acl"), acl);
        }
        Self::start_prepared(pki, root, name)
    }

    /// Starts funcd on a root the test has already prepared.
    pub fn start_prepared(pki: Pki, root: Root, name: &str) -> Self {
        let minion = FuncdProcess::start(&root, name).expect("funcd starts");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        Self {
            minion,
            pki,
            root,
            rt,
        }
    }

    pub fn overlord_tls(&self) -> Arc<rustls::ClientConfig> {
        Pki::client_tls(&self.pki.overlord())
    }

    /// One call as the overlord on a fresh connection.
    pub fn call(&self, method: &str, params: Vec<Value>) -> Result<Value, CallError> {
        let tls = self.overlord_tls();
        let (addr, name) = (self.minion.addr, self.minion.name.clone());
        self.rt.block_on(async move {
            let mut c = MinionClient::connect(addr, &name, tls, Duration::from_secs(20)).await?;
            c.call(method, params).await
        })
    }

    /// One call on a fresh connection, presenting `creds` (another
    /// certificate of the same CA, limited by the minion's ACLs).
    pub fn call_as(
        &self,
        creds: &common::tls::Credentials,
        method: &str,
        params: Vec<Value>,
    ) -> Result<Value, CallError> {
        let tls = Pki::client_tls(creds);
        let (addr, name) = (self.minion.addr, self.minion.name.clone());
        self.rt.block_on(async move {
            let mut c = MinionClient::connect(addr, &name, tls, Duration::from_secs(20)).await?;
            c.call(method, params).await
        })
    }

    /// Credentials of a fresh certificate named `name` from the same CA.
    pub fn other_caller(&self, name: &str) -> common::tls::Credentials {
        let root = self.pki.minion_root(name);
        self.pki.minion_creds(&root, name)
    }

    /// Sends raw bytes over a TLS connection as the overlord and returns
    /// everything the minion sends back until it closes (or 20 s pass).
    pub fn raw(&self, request: Vec<u8>, half_close: bool) -> Vec<u8> {
        let tls = self.overlord_tls();
        let (addr, name) = (self.minion.addr, self.minion.name.clone());
        self.rt.block_on(async move {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let server = rustls::pki_types::ServerName::try_from(name).expect("name");
            let mut stream = tokio_rustls::TlsConnector::from(tls)
                .connect(server, tcp)
                .await
                .expect("tls");
            let _ = stream.write_all(&request).await;
            if half_close {
                let _ = stream.shutdown().await;
            }
            let mut out = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out)).await;
            out
        })
    }
}

/// An HTTP POST of `body` to `/RPC2`, asking to close after the reply.
pub fn post(body: &[u8]) -> Vec<u8> {
    let mut req = format!("POST /RPC2 HTTP/1.1\r\nHost: m\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(body);
    req
}

/// Status code of a raw HTTP response.
pub fn status(resp: &[u8]) -> u16 {
    String::from_utf8_lossy(resp)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub fn s(text: &str) -> Value {
    Value::String(text.into())
}

/// `["REMOTE_ERROR", type, message, ...]` → (type, message).
pub fn remote_error(v: &Value) -> Option<(String, String)> {
    match v {
        Value::Array(a) if common::xmlrpc::is_remote_error(v) => match (a.get(1), a.get(2)) {
            (Some(Value::String(t)), Some(Value::String(m))) => Some((t.clone(), m.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// The job id of a `JOB_ID: <id>[ ...]` line in `text` (printed
/// shell-quoted when it holds `*`, `;` or `@`).
pub fn job_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("JOB_ID: "))
        .map(|l| unquote(l.split_whitespace().next().unwrap_or("")))
        .unwrap_or_else(|| panic!("no JOB_ID in {text:?}"))
}

/// A word as the shell reads it (func quotes ids with single quotes).
pub fn unquote(word: &str) -> String {
    word.strip_prefix('\'')
        .and_then(|w| w.strip_suffix('\''))
        .map(|w| w.replace("'\\''", "'"))
        .unwrap_or_else(|| word.to_string())
}

/// `func --json ARGS` against `fleet`, parsed.
pub fn func_json(fleet: &func_tests::fixture::Fleet, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = fleet.func(&full);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// Processes whose command line is exactly `words`.
pub fn processes(words: &[&str]) -> usize {
    let want: Vec<u8> = words.iter().flat_map(|w| w.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want))
                .count()
        })
        .unwrap_or(0)
}
