use super::*;
use std::sync::Arc;

const DAY: Duration = Duration::from_secs(24 * 3600);

fn tenant_subject() -> Subject {
    Subject {
        user: "alice".into(),
        groups: vec!["devs".into(), "ops".into(), "team:a b".into()],
        tenant: Some("foofoo".into()),
    }
}

/// A CA created 10 days ago (so that certificates "issued" in the past chain correctly).
fn setup() -> (tempfile::TempDir, CaInitOutput, Ca) {
    let dir = tempfile::tempdir().unwrap();
    let out = init_ca(
        dir.path(),
        &["paddock.example.com".into(), "10.1.2.3".into()],
        false,
        SystemTime::now() - 10 * DAY,
    )
    .unwrap();
    let ca = Ca::load(&out.ca_cert, &out.ca_key).unwrap();
    (dir, out, ca)
}

fn der_of(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

#[test]
fn init_writes_files_and_refuses_overwrite() {
    let (dir, out, _ca) = setup();
    for p in [
        &out.ca_cert,
        &out.ca_key,
        &out.serving_cert,
        &out.serving_key,
        &out.admin_cert,
        &out.admin_key,
    ] {
        assert!(p.is_file(), "{} missing", p.display());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for p in [&out.ca_key, &out.serving_key, &out.admin_key] {
            let mode = fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
    }
    let old_ca = fs::read_to_string(&out.ca_cert).unwrap();
    let err = init_ca(dir.path(), &[], false, SystemTime::now()).unwrap_err();
    assert!(matches!(err, PkiError::AlreadyExists(_)), "{err}");
    assert_eq!(fs::read_to_string(&out.ca_cert).unwrap(), old_ca);
    // no stray temp files
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");

    let out2 = init_ca(dir.path(), &[], true, SystemTime::now()).unwrap();
    assert_ne!(fs::read_to_string(&out2.ca_cert).unwrap(), old_ca);
    Ca::load(&out2.ca_cert, &out2.ca_key).unwrap();
}

#[test]
fn admin_certificate_identity() {
    let (_dir, out, _ca) = setup();
    let pem = fs::read_to_string(&out.admin_cert).unwrap();
    let peer = parse_peer_cert(&der_of(&pem)).unwrap();
    assert_eq!(peer.user, "admin");
    assert_eq!(peer.groups, vec!["paddock:platform-admins".to_string()]);
    assert_eq!(peer.tenant, None);
    assert_eq!(peer.serial_hex, out.admin.serial_hex);
    assert_eq!(peer.not_after, out.admin.not_after);
    assert_eq!(pem, out.admin.cert_pem);
}

#[test]
fn serving_certificate_names() {
    let (_dir, out, _ca) = setup();
    let pem = fs::read_to_string(&out.serving_cert).unwrap();
    let der = der_of(&pem);
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(&der).unwrap();
    let san = cert.subject_alternative_name().unwrap().unwrap();
    let names: Vec<String> = san
        .value
        .general_names
        .iter()
        .map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => d.to_string(),
            x509_parser::extensions::GeneralName::IPAddress(b) => match b.len() {
                4 => std::net::IpAddr::from(<[u8; 4]>::try_from(*b).unwrap()).to_string(),
                _ => std::net::IpAddr::from(<[u8; 16]>::try_from(*b).unwrap()).to_string(),
            },
            other => format!("{other}"),
        })
        .collect();
    for want in [
        "localhost",
        "*.tenants.paddock.internal",
        "paddock.example.com",
        "127.0.0.1",
        "::1",
        "10.1.2.3",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
}

#[test]
fn sign_csr_and_parse_back() {
    let (_dir, _out, ca) = setup();
    let subject = tenant_subject();
    let (key_pem, csr_pem) = generate_key_and_csr(&subject).unwrap();
    assert!(key_pem.contains("PRIVATE KEY"));
    assert!(csr_pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----"));
    let now = SystemTime::now();
    let issued = ca.sign_csr(&csr_pem, &subject, DAY, now).unwrap();
    assert_eq!(issued.serial_hex.len(), 32);
    assert!(
        issued
            .serial_hex
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    );
    let peer = parse_peer_cert(&der_of(&issued.cert_pem)).unwrap();
    assert_eq!(peer.user, "alice");
    assert_eq!(peer.groups, subject.groups);
    assert_eq!(peer.tenant.as_deref(), Some("foofoo"));
    assert_eq!(peer.serial_hex, issued.serial_hex);
    assert_eq!(peer.not_before, issued.not_before);
    assert_eq!(peer.not_after, issued.not_after);
    assert_eq!(issued.not_after, trunc(now) + DAY);
    assert_eq!(issued.not_before, trunc(now) - CLOCK_SKEW);
    assert!(peer.is_time_valid(now));

    // the certificate carries the CSR's key
    let cert_der = der_of(&issued.cert_pem);
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(&cert_der).unwrap();
    let key = KeyPair::from_pem(&key_pem).unwrap();
    assert_eq!(
        cert.tbs_certificate.subject_pki.raw,
        key.subject_public_key_info().as_slice()
    );
    // and is signed by the CA
    let (_, ca_cert) = x509_parser::certificate::X509Certificate::from_der(ca.cert_der()).unwrap();
    cert.verify_signature(Some(ca_cert.public_key())).unwrap();
    assert!(!cert.is_ca());

    // two certificates never share a serial
    let issued2 = ca.sign_csr(&csr_pem, &subject, DAY, now).unwrap();
    assert_ne!(issued.serial_hex, issued2.serial_hex);
}

#[test]
fn csr_subject_is_not_trusted() {
    let (_dir, _out, ca) = setup();
    let evil = Subject {
        user: "mallory".into(),
        groups: vec!["system:masters".into()],
        tenant: None,
    };
    let (_key, csr_pem) = generate_key_and_csr(&evil).unwrap();
    let issued = ca
        .sign_csr(&csr_pem, &tenant_subject(), DAY, SystemTime::now())
        .unwrap();
    let peer = parse_peer_cert(&der_of(&issued.cert_pem)).unwrap();
    assert_eq!(peer.user, "alice");
    assert!(!peer.groups.iter().any(|g| g == "system:masters"));
    assert_eq!(peer.tenant.as_deref(), Some("foofoo"));
}

#[test]
fn csr_with_bad_signature_is_refused() {
    let (_dir, _out, ca) = setup();
    let (_key, csr_pem) = generate_key_and_csr(&tenant_subject()).unwrap();
    let der = CertificateSigningRequestDer::from_pem_slice(csr_pem.as_bytes())
        .unwrap()
        .to_vec();
    // flip a bit inside the signature (the last bytes of the DER)
    let mut bad_sig = der.clone();
    let n = bad_sig.len();
    bad_sig[n - 3] ^= 0x01;
    let err = ca
        .sign_csr(
            &pem_encode("CERTIFICATE REQUEST", &bad_sig),
            &tenant_subject(),
            DAY,
            SystemTime::now(),
        )
        .unwrap_err();
    assert!(matches!(err, PkiError::Csr(_)), "{err}");

    // change the signed content (a byte of the CN "alice" -> "alicf") without re-signing
    let mut tampered = der.clone();
    let pos = tampered.windows(5).position(|w| w == b"alice").unwrap();
    tampered[pos + 4] = b'f';
    let err = ca
        .sign_csr(
            &pem_encode("CERTIFICATE REQUEST", &tampered),
            &tenant_subject(),
            DAY,
            SystemTime::now(),
        )
        .unwrap_err();
    assert!(matches!(err, PkiError::Csr(_)), "{err}");

    let err = ca
        .sign_csr("not a csr", &tenant_subject(), DAY, SystemTime::now())
        .unwrap_err();
    assert!(matches!(err, PkiError::Csr(_)), "{err}");
}

#[test]
fn invalid_subjects_are_refused() {
    let (_dir, _out, ca) = setup();
    let (_key, csr_pem) = generate_key_and_csr(&tenant_subject()).unwrap();
    for bad in [
        Subject {
            user: String::new(),
            groups: vec![],
            tenant: None,
        },
        Subject {
            user: "bob".into(),
            groups: vec![],
            tenant: Some("Foo".into()),
        },
        Subject {
            user: "bob".into(),
            groups: vec!["".into()],
            tenant: None,
        },
        Subject {
            user: "bob\n".into(),
            groups: vec![],
            tenant: None,
        },
    ] {
        let err = ca
            .sign_csr(&csr_pem, &bad, DAY, SystemTime::now())
            .unwrap_err();
        assert!(matches!(err, PkiError::InvalidSubject(_)), "{bad:?}: {err}");
    }
}

#[test]
fn ca_load_checks_key_matches() {
    let (_dir, out, _ca) = setup();
    let (_dir2, out2, _ca2) = setup();
    let err = Ca::load(&out.ca_cert, &out2.ca_key).unwrap_err();
    assert!(matches!(err, PkiError::X509(_)), "{err}");
    // a leaf is not a CA
    let err = Ca::load(&out.admin_cert, &out.admin_key).unwrap_err();
    assert!(matches!(err, PkiError::X509(_)), "{err}");
    let err = Ca::load(Path::new("/nonexistent/ca.crt"), &out.ca_key).unwrap_err();
    assert!(matches!(err, PkiError::Io { .. }), "{err}");
}

#[test]
fn issue_new_and_validity_clamped_to_ca() {
    let (_dir, _out, ca) = setup();
    let (key_pem, issued) = ca
        .issue_new(&tenant_subject(), 100 * 365 * DAY, SystemTime::now())
        .unwrap();
    assert!(key_pem.contains("PRIVATE KEY"));
    assert_eq!(issued.not_after, ca.not_after());
}

#[test]
fn serial_hex_normalization() {
    assert_eq!(normalize_serial_hex(&[0x00, 0x80, 0x01]), "8001");
    assert_eq!(normalize_serial_hex(&[0x7f, 0x00]), "7f00");
    assert_eq!(normalize_serial_hex(&[0x00]), "00");
    assert_eq!(normalize_serial_hex(&[]), "");
}

#[test]
fn crypto_provider_is_ring_and_install_is_idempotent() {
    install_crypto_provider();
    install_crypto_provider();
    let p = crypto_provider();
    assert!(!p.cipher_suites.is_empty());
    assert!(rustls::crypto::CryptoProvider::get_default().is_some());
}

// ---- real rustls handshakes over an in-memory pipe ----------------------------------------

fn pump(
    client: &mut rustls::ClientConnection,
    server: &mut rustls::ServerConnection,
) -> Result<(), rustls::Error> {
    for _ in 0..50 {
        let mut progressed = false;
        while client.wants_write() {
            let mut buf = Vec::new();
            client.write_tls(&mut buf).unwrap();
            if buf.is_empty() {
                break;
            }
            progressed = true;
            let mut rd = &buf[..];
            while !rd.is_empty() {
                server.read_tls(&mut rd).unwrap();
                server.process_new_packets()?;
            }
        }
        while server.wants_write() {
            let mut buf = Vec::new();
            server.write_tls(&mut buf).unwrap();
            if buf.is_empty() {
                break;
            }
            progressed = true;
            let mut rd = &buf[..];
            while !rd.is_empty() {
                client.read_tls(&mut rd).unwrap();
                client.process_new_packets()?;
            }
        }
        if !client.is_handshaking() && !server.is_handshaking() && !progressed {
            return Ok(());
        }
    }
    panic!("handshake did not finish");
}

struct Handshake {
    result: Result<(), rustls::Error>,
    server: rustls::ServerConnection,
}

fn handshake(out: &CaInitOutput, client_cert: Option<(&str, &str)>) -> Handshake {
    let server_cfg =
        Arc::new(server_config(&out.serving_cert, &out.serving_key, &out.ca_cert).unwrap());
    let ca_pem = fs::read(&out.ca_cert).unwrap();
    let client_cfg = upstream_client_config(
        &ca_pem,
        client_cert.map(|c| c.0.as_bytes()),
        client_cert.map(|c| c.1.as_bytes()),
        vec![b"h2".to_vec()],
    )
    .unwrap();
    let mut client = rustls::ClientConnection::new(
        Arc::new(client_cfg),
        rustls::pki_types::ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut server = rustls::ServerConnection::new(server_cfg).unwrap();
    let result = pump(&mut client, &mut server);
    if result.is_ok() {
        // the client speaks first after the handshake: makes the server see everything
        use std::io::Write as _;
        client.writer().write_all(b"ping").unwrap();
        let r = pump(&mut client, &mut server);
        return Handshake { result: r, server };
    }
    Handshake { result, server }
}

fn peer_of(server: &rustls::ServerConnection) -> Option<PeerCert> {
    server
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| parse_peer_cert(c).unwrap())
}

#[test]
fn handshake_with_valid_client_cert() {
    let (_dir, out, ca) = setup();
    let (key, cert) = ca
        .issue_new(&tenant_subject(), DAY, SystemTime::now())
        .unwrap();
    let hs = handshake(&out, Some((&cert.cert_pem, &key)));
    hs.result.unwrap();
    assert_eq!(hs.server.alpn_protocol(), Some(&b"h2"[..]));
    let peer = peer_of(&hs.server).unwrap();
    assert_eq!(peer.user, "alice");
    assert_eq!(peer.serial_hex, cert.serial_hex);
    assert!(peer.is_time_valid(SystemTime::now()));
}

#[test]
fn handshake_without_client_cert_is_allowed() {
    let (_dir, out, _ca) = setup();
    let hs = handshake(&out, None);
    hs.result.unwrap();
    assert!(peer_of(&hs.server).is_none());
}

#[test]
fn expired_cert_of_our_ca_passes_the_handshake() {
    let (_dir, out, ca) = setup();
    let now = SystemTime::now();
    // issued 3 days ago for 1 day: expired 2 days ago
    let (key, cert) = ca.issue_new(&tenant_subject(), DAY, now - 3 * DAY).unwrap();
    let hs = handshake(&out, Some((&cert.cert_pem, &key)));
    hs.result.unwrap();
    let peer = peer_of(&hs.server).unwrap();
    assert!(peer.not_after < now);
    assert!(!peer.is_time_valid(now));
    assert_eq!(peer.serial_hex, cert.serial_hex);
}

#[test]
fn not_yet_valid_cert_of_our_ca_passes_the_handshake() {
    let (_dir, out, ca) = setup();
    let now = SystemTime::now();
    let (key, cert) = ca.issue_new(&tenant_subject(), DAY, now + 2 * DAY).unwrap();
    let hs = handshake(&out, Some((&cert.cert_pem, &key)));
    hs.result.unwrap();
    let peer = peer_of(&hs.server).unwrap();
    assert!(peer.not_before > now);
    assert!(!peer.is_time_valid(now));
}

#[test]
fn cert_of_another_ca_fails_the_handshake() {
    let (_dir, out, _ca) = setup();
    let (_dir2, _out2, other) = setup();
    let (key, cert) = other
        .issue_new(&tenant_subject(), DAY, SystemTime::now())
        .unwrap();
    let hs = handshake(&out, Some((&cert.cert_pem, &key)));
    let err = hs.result.unwrap_err();
    // both CAs are called "paddock tenant CA": webpki finds the name and the signature fails
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature
            )
        ),
        "{err:?}"
    );
    // also an expired one of the other CA
    let (key, cert) = other
        .issue_new(&tenant_subject(), DAY, SystemTime::now() - 3 * DAY)
        .unwrap();
    let hs = handshake(&out, Some((&cert.cert_pem, &key)));
    assert!(hs.result.is_err());
}

#[test]
fn verifier_directly() {
    let (_dir, out, ca) = setup();
    let v = client_cert_verifier(&out.ca_cert).unwrap();
    assert!(!v.client_auth_mandatory());
    assert!(v.offer_client_auth());
    let now = rustls::pki_types::UnixTime::now();
    let (_k, expired) = ca
        .issue_new(&tenant_subject(), DAY, SystemTime::now() - 3 * DAY)
        .unwrap();
    let der = CertificateDer::from(der_of(&expired.cert_pem));
    v.verify_client_cert(&der, &[], now).unwrap();
    let (_dir2, _out2, other) = setup();
    let (_k, foreign) = other
        .issue_new(&tenant_subject(), DAY, SystemTime::now())
        .unwrap();
    let der = CertificateDer::from(der_of(&foreign.cert_pem));
    assert!(v.verify_client_cert(&der, &[], now).is_err());
    // garbage
    let der = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
    assert!(v.verify_client_cert(&der, &[], now).is_err());
}

#[test]
fn upstream_client_config_requires_a_ca() {
    let (_dir, out, ca) = setup();
    let err = upstream_client_config(b"", None, None, vec![]).unwrap_err();
    assert!(matches!(err, PkiError::Config(_)), "{err}");
    let ca_pem = ca.cert_pem().as_bytes().to_vec();
    let cert = fs::read(&out.admin_cert).unwrap();
    let key = fs::read(&out.admin_key).unwrap();
    let err = upstream_client_config(&ca_pem, Some(&cert), None, vec![]).unwrap_err();
    assert!(matches!(err, PkiError::Config(_)), "{err}");
    let cfg = upstream_client_config(&ca_pem, Some(&cert), Some(&key), vec![b"http/1.1".to_vec()])
        .unwrap();
    assert_eq!(cfg.alpn_protocols, vec![b"http/1.1".to_vec()]);
    assert!(cfg.client_auth_cert_resolver.has_certs());
    upstream_client_config(&ca_pem, None, None, vec![]).unwrap();
}

#[test]
fn server_config_errors_name_the_file() {
    let (dir, out, _ca) = setup();
    let missing = dir.path().join("nope.crt");
    let err = server_config(&missing, &out.serving_key, &out.ca_cert).unwrap_err();
    assert!(err.to_string().contains("nope.crt"), "{err}");
    let err = server_config(&out.serving_cert, &out.serving_key, &out.serving_key).unwrap_err();
    assert!(err.to_string().contains("serving.key"), "{err}");
}

/// Interop with OpenSSL (skipped when `openssl` is not installed): an OpenSSL CSR (RSA and
/// EC, with a SAN request extension) is accepted, and OpenSSL verifies and reads the result.
#[test]
fn openssl_interop() {
    use std::process::Command;
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("SKIP openssl_interop: openssl not installed");
        return;
    }
    let (dir, out, ca) = setup();
    for (name, newkey) in [("rsa", "rsa:2048"), ("ec", "ec")] {
        let key = dir.path().join(format!("{name}.key"));
        let csr = dir.path().join(format!("{name}.csr"));
        let mut cmd = Command::new("openssl");
        cmd.args(["req", "-new", "-nodes", "-newkey", newkey]);
        if name == "ec" {
            cmd.args(["-pkeyopt", "ec_paramgen_curve:P-256"]);
        }
        let st = cmd
            .args([
                "-subj",
                "/CN=ignored/O=system:masters",
                "-addext",
                "subjectAltName=DNS:x",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&csr)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        let issued = ca
            .sign_csr(
                &fs::read_to_string(&csr).unwrap(),
                &tenant_subject(),
                DAY,
                SystemTime::now(),
            )
            .unwrap();
        let crt = dir.path().join(format!("{name}.crt"));
        fs::write(&crt, &issued.cert_pem).unwrap();
        let v = Command::new("openssl")
            .args(["verify", "-purpose", "sslclient", "-CAfile"])
            .arg(&out.ca_cert)
            .arg(&crt)
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "{}{}",
            String::from_utf8_lossy(&v.stdout),
            String::from_utf8_lossy(&v.stderr)
        );
        let s = Command::new("openssl")
            .args([
                "x509", "-noout", "-subject", "-serial", "-nameopt", "RFC2253", "-in",
            ])
            .arg(&crt)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&s.stdout).to_string();
        assert!(text.contains("CN=alice"), "{text}");
        assert!(text.contains("OU=foofoo"), "{text}");
        assert!(text.contains("O=devs") && text.contains("O=ops"), "{text}");
        assert!(!text.contains("system:masters"), "{text}");
        assert!(
            text.to_lowercase()
                .contains(&format!("serial={}", issued.serial_hex)),
            "{text}"
        );
    }
}
