//! HTTPS on loopback: a real TLS server with a certificate made for the test. Trusted through
//! the configured root certificate it works under an https-only policy; without it, the
//! certificate is refused.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_core::ToolError;
use tools_web::Config;

use super::{Fixture, LOOPBACK, net, policy};

/// Serves `body` over TLS as `site.test`; returns the address and the certificate (PEM).
async fn tls_server(body: &'static str) -> (SocketAddr, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["site.test".to_owned()]).unwrap();
    let cert_pem = certified.cert.pem();
    let cert = certified.cert.der().clone();
    let key =
        rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind((LOOPBACK, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (addr, cert_pem)
}

#[tokio::test]
async fn https_with_a_trusted_root_and_refused_without() {
    let (addr, pem) = tls_server("over tls").await;
    let mut https_only = policy();
    https_only.allow_http = false;
    let url = format!("https://site.test:{}/", addr.port());

    let trusted = Config::new().with_net(net().with_root_certificate_pem(pem.into_bytes()));
    let fx = Fixture::with(trusted, https_only.clone());
    let text = fx
        .ok("http_request", &json!({"url": url}).to_string())
        .await
        .joined_text();
    assert!(text.starts_with("HTTP 200 OK"), "{text}");
    assert!(text.ends_with("over tls"), "{text}");

    // The same server, not trusted: the certificate is refused.
    let fx = Fixture::with(Config::new().with_net(net()), https_only);
    match fx
        .err("http_request", &json!({"url": url}).to_string())
        .await
    {
        ToolError::Failed(m) => assert!(m.to_lowercase().contains("certificate"), "{m}"),
        e => panic!("{e:?}"),
    }
}
