//! Secrets never reach the model's context or the logs: header values that carry credentials
//! and URL query parameters with credential-like names are replaced by a marker.

use reqwest::header::HeaderMap;
use url::Url;

/// Header names whose values are credentials, compared in lower case.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "set-cookie2",
];

/// Fragments that mark a header or query parameter name as a credential.
const SECRET_PARTS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api-key",
    "api_key",
    "auth",
    "session",
    "credential",
    "signature",
    "private",
];

/// Whether the value of a header or parameter called `name` is a credential.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&name.as_str())
        || SECRET_PARTS.iter().any(|p| name.contains(p))
        || name == "key"
        || name.ends_with("-key")
        || name.ends_with("_key")
        || name == "sig"
}

/// The headers as `(name, value)` lines, secrets replaced by `[redacted, N bytes]`, values that
/// are not text shown as `[N bytes, not text]`.
pub fn headers(map: &HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .map(|(name, value)| {
            let shown = if is_secret_name(name.as_str()) {
                format!("[redacted, {} bytes]", value.len())
            } else {
                match value.to_str() {
                    Ok(v) => v.to_owned(),
                    Err(_) => format!("[{} bytes, not text]", value.len()),
                }
            };
            (name.as_str().to_owned(), shown)
        })
        .collect()
}

/// `url` with credential-like query values replaced, for logs.
pub fn url(url: &Url) -> String {
    if url.query().is_none() {
        return url.to_string();
    }
    let mut shown = url.clone();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if is_secret_name(&k) {
                "[redacted]".to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    shown.query_pairs_mut().clear().extend_pairs(pairs);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for secret in [
            "Authorization",
            "Cookie",
            "Set-Cookie",
            "X-Api-Key",
            "X-Subscription-Token",
            "x-auth-token",
            "api_key",
            "access_token",
            "X-Amz-Signature",
            "client_secret",
            "key",
            "sig",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for plain in [
            "Content-Type",
            "Keep-Alive",
            "Cache-Control",
            "Location",
            "q",
            "page",
            "monkey",
        ] {
            assert!(!is_secret_name(plain), "{plain}");
        }
    }

    #[test]
    fn urls() {
        let u = Url::parse("https://a.example/p?q=rust&api_key=sk-123&page=2").unwrap();
        let shown = url(&u);
        assert!(!shown.contains("sk-123"), "{shown}");
        assert!(
            shown.contains("q=rust") && shown.contains("page=2"),
            "{shown}"
        );
    }
}
