//! Delivering one job's notice to one target: a webhook POST of the JSON
//! document, signed with `X-Func-Signature: sha256=<hex HMAC-SHA256 of the
//! body>` under the target's secret, or a mail (lettre, over SMTP); tried
//! again with a growing pause (backon) while it fails.

use std::time::Duration;

use super::settings::{How, SmtpTls, Target};

/// Tries a delivery makes at most.
pub const TRIES: usize = 6;

/// Delivers `doc` (the notice, JSON text) to `target`, trying again while it
/// fails (1 s, doubling, at most 60 s between tries): the outcome (the last
/// error) and the tries made.
pub async fn deliver(
    http: &reqwest::Client,
    target: &Target,
    doc: &str,
    subject: &str,
) -> (Result<(), String>, usize) {
    use backon::Retryable as _;
    let tries = std::sync::atomic::AtomicUsize::new(0);
    let pauses = backon::ExponentialBuilder::new()
        .with_min_delay(Duration::from_secs(1))
        .with_max_delay(Duration::from_secs(60))
        .with_factor(2.0)
        .with_max_times(TRIES - 1);
    let sent = (|| {
        tries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        once(http, target, doc, subject)
    })
    .retry(pauses)
    .sleep(tokio::time::sleep)
    .notify(|e, pause| tracing::warn!(target = %target.name, error = %e, ?pause, "notification failed; trying again"))
    .await;
    (sent, tries.into_inner())
}

async fn once(http: &reqwest::Client, target: &Target, doc: &str, subject: &str) -> Result<(), String> {
    match &target.how {
        How::Webhook { url, secret } => {
            let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
            let signature = hex(ring::hmac::sign(&key, doc.as_bytes()).as_ref());
            let answer = http
                .post(url)
                .header("Content-Type", "application/json")
                .header("X-Func-Signature", format!("sha256={signature}"))
                .header("X-Func-Notification", target.name.as_str())
                .body(doc.to_string())
                .send()
                .await
                // Without its URL: a webhook's path or query may hold its secret.
                .map_err(|e| format!("{}: {}", target.destination(), chain(&e.without_url())))?;
            match answer.status().is_success() {
                true => Ok(()),
                false => Err(format!("{} answered {}", target.destination(), answer.status())),
            }
        }
        How::Mail {
            host,
            port,
            tls,
            from,
            to,
        } => mail(host, *port, *tls, from, to, subject, doc).await,
    }
}

async fn mail(
    host: &str,
    port: u16,
    tls: SmtpTls,
    from: &str,
    to: &[String],
    subject: &str,
    doc: &str,
) -> Result<(), String> {
    use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
    let mut message = Message::builder()
        .from(from.parse().map_err(|e| format!("from {from:?}: {e}"))?)
        .subject(subject)
        .header(lettre::message::header::ContentType::TEXT_PLAIN);
    for t in to {
        message = message.to(t.parse().map_err(|e| format!("to {t:?}: {e}"))?);
    }
    let pretty = serde_json::from_str::<serde_json::Value>(doc)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| doc.to_string());
    let message = message.body(pretty).map_err(|e| e.to_string())?;
    let transport = match tls {
        SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
        SmtpTls::StartTls => {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host).map_err(|e| e.to_string())?
        }
        SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(host).map_err(|e| e.to_string())?,
    }
    .port(port)
    .timeout(Some(Duration::from_secs(30)))
    .build();
    transport
        .send(message)
        .await
        .map(|_| ())
        .map_err(|e| format!("mail via {host}:{port}: {}", chain(&e)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

use crate::reply::chain;

#[cfg(test)]
mod tests {
    #[test]
    fn the_signature_is_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"Jefe");
        let sig = super::hex(ring::hmac::sign(&key, b"what do ya want for nothing?").as_ref());
        assert_eq!(
            sig,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
