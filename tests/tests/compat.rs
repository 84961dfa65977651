//! Input other XML-RPC clients send that Python's SimpleXMLRPCServer
//! accepts: a declared non-UTF-8 encoding (Frontier::RPC writes Latin-1),
//! `<int>`/`<i4>` beyond 32 bits (node-xmlrpc, Frontier, Ruby), the
//! dateTime forms RPC::XML and others write, and ALPN offering http/1.0.

use std::sync::Arc;
use std::time::Duration;

use common::rpc::client::MinionClient;
use common::Value;

use crate::helper::{post, OneMinion};

/// The body of the HTTP response to `body`, posted as the overlord.
fn answer(m: &OneMinion, body: &[u8]) -> String {
    let raw = m.raw(post(body), false);
    let text = String::from_utf8(raw).expect("answers in UTF-8");
    text.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}

fn echo(value_xml: &str) -> Vec<u8> {
    format!("<?xml version=\"1.0\"?><methodCall><methodName>test.echo</methodName><params><param><value>{value_xml}</value></param></params></methodCall>").into_bytes()
}

#[test]
fn lenient_input_that_python_accepts() {
    let m = OneMinion::start("m1");
    // Latin-1, as declared.
    let mut latin1 = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><methodCall><methodName>test.echo</methodName><params><param><value><string>caf".to_vec();
    latin1.push(0xe9);
    latin1.extend_from_slice(b"</string></value></param></params></methodCall>");
    let got = answer(&m, &latin1);
    assert!(got.contains("<string>caf\u{e9}</string>"), "{got}");
    // Declared us-ascii, written in UTF-8 (Perl's RPC::XML): read as UTF-8.
    let ascii = "<?xml version=\"1.0\" encoding=\"us-ascii\"?><methodCall><methodName>test.echo</methodName><params><param><value><struct><member><name>clé ✓</name><value><string>café ✓</string></value></member></struct></value></param></params></methodCall>";
    let got = answer(&m, ascii.as_bytes());
    assert!(
        got.contains("<name>clé ✓</name>") && got.contains("<string>café ✓</string>"),
        "{got}"
    );
    // Integers beyond 32 bits sent as <int> or <i4> are read, and the
    // answer writes its wide integers in the sender's tag (node-xmlrpc and
    // Frontier cannot read <i8>); an <i8> sender gets <i8>.
    for tag in ["int", "i4"] {
        let got = answer(&m, &echo(&format!("<{tag}>4294967296</{tag}>")));
        assert!(
            got.contains(&format!("<{tag}>4294967296</{tag}>")),
            "{tag}: {got}"
        );
        assert!(!got.contains("<i8>"), "{tag}: {got}");
    }
    let got = answer(&m, &echo("<i8>4294967296</i8>"));
    assert!(got.contains("<i8>4294967296</i8>"), "{got}");
    let got = answer(&m, &echo("<int>-7</int>"));
    assert!(
        got.contains("<i4>-7</i4>") || got.contains("<int>-7</int>"),
        "{got}"
    );
    // dateTime forms: read, and handed back as they came.
    for form in [
        "20240105T11:59:00",
        "20240105T11:59:00Z",
        "2024-01-05T11:59:00",
        "2024-01-05T11:59:00+01:00",
        "2024-01-05T11:59:00.123",
    ] {
        let got = answer(&m, &echo(&format!("<dateTime.iso8601>{form}</dateTime.iso8601>")));
        assert!(
            got.contains(&format!("<dateTime.iso8601>{form}</dateTime.iso8601>")),
            "{form}: echoed unchanged: {got}"
        );
    }
    // Not a date at all is still a fault.
    let got = answer(&m, &echo("<dateTime.iso8601>yesterday</dateTime.iso8601>"));
    assert!(got.contains("faultCode"), "{got}");
}

#[test]
fn alpn_offering_only_http_1_0_is_served() {
    let m = OneMinion::start("m1");
    let mut cfg = common::tls::client_config(&m.pki.overlord()).unwrap();
    cfg.alpn_protocols = vec![b"http/1.0".to_vec()];
    let tls = Arc::new(cfg);
    let addr = m.minion.addr;
    let got = m.rt.block_on(async move {
        let mut c = MinionClient::connect(addr, "m1", tls, Duration::from_secs(10)).await?;
        c.call("test.ping", vec![]).await
    });
    assert_eq!(got.unwrap(), Value::Integer(1));
}

#[test]
fn perl_clients_rpc_xml_and_frontier_speak_to_minion_and_certmaster() {
    let modules = std::process::Command::new("perl")
        .args([
            "-MRPC::XML::Client",
            "-MFrontier::Client",
            "-MLWP::Protocol::https",
            "-e",
            "1",
        ])
        .output()
        .expect("perl runs");
    assert!(
        modules.status.success(),
        "the Perl XML-RPC clients are missing (make deps installs librpc-xml-perl, libfrontier-rpc-perl, liblwp-protocol-https-perl): {}",
        String::from_utf8_lossy(&modules.stderr)
    );
    // Called at its address, its certificate checked against its name.
    let fleet = func_tests::fixture::Fleet::start(&["m1", "m2"]);
    let minion = &fleet.minions[0];
    let other = &fleet.minions[1];
    let overlord = fleet.cm.overlord();
    let csr = fleet.dir.path().join("perl.csr");
    let key = certs::request::new_key().unwrap();
    std::fs::write(&csr, certs::request::csr("perlclient", &key).unwrap()).unwrap();
    let out = std::process::Command::new("perl")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/perl/compat.pl"))
        .arg(format!("https://127.0.0.1:{}/RPC2", minion.addr.port()))
        .arg(&overlord.ca)
        .arg(&overlord.cert)
        .arg(&overlord.key)
        .arg(other.root.minion_cert("m2"))
        .arg(other.root.minion_key("m2"))
        .arg(format!("http://{}/RPC2", fleet.cm.addr()))
        .arg(&csr)
        .arg("m1")
        .output()
        .expect("perl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("perl: ") && text.contains(", 0 failed"), "{text}");
}

#[test]
fn curl_with_http_1_0_and_a_hand_written_request() {
    let m = OneMinion::start("m1");
    let creds = m.pki.overlord();
    let body = "<?xml version=\"1.0\"?><methodCall><methodName>test.add</methodName><params><param><value><int>2</int></value></param><param><value><i4>3</i4></value></param></params></methodCall>";
    let out = std::process::Command::new("curl")
        .args(["--silent", "--show-error", "--http1.0", "--max-time", "20"])
        .arg("--cacert")
        .arg(&creds.ca)
        .arg("--cert")
        .arg(&creds.cert)
        .arg("--key")
        .arg(&creds.key)
        .args(["--resolve", &format!("m1:{}:127.0.0.1", m.minion.addr.port())])
        .args(["-H", "Content-Type: text/xml", "--data-binary", body])
        .arg(format!("https://m1:{}/RPC2", m.minion.addr.port()))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("<i4>5</i4>") || text.contains("<int>5</int>"),
        "{text}"
    );
}
