//! Who may use the page: a request to this port, named as this port, from
//! no other web page, carrying this start's token.
//!
//! A page on another site can make the person's browser send requests to
//! 127.0.0.1, and a name it controls can be re-pointed at 127.0.0.1 (DNS
//! rebinding); the token it cannot know, the `Host` it cannot forge past a
//! browser, and the `Origin` a browser adds names that site. Each check
//! refuses on its own.

use hyper::header::{HOST, HeaderMap, ORIGIN};

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` is not `127.0.0.1:<port>` or `localhost:<port>` (or is missing).
    Host,
    /// `Origin` names another site (or `null`), or the browser says the
    /// request came from another site.
    Origin,
    /// No `token=` in the query, or another one.
    Token,
}

impl Refusal {
    /// What the refused client is told.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Host => {
                "refused: the Host header is not this page's address (127.0.0.1:<port> or localhost:<port>)"
            }
            Refusal::Origin => "refused: the request came from another web page",
            Refusal::Token => {
                "refused: the token is missing or wrong; open the address `chock ui` printed"
            }
        }
    }
}

/// The names this page answers to.
fn own_hosts(port: u16) -> [String; 2] {
    [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
}

/// Admits a request only when all three checks pass.
pub fn admit(
    headers: &HeaderMap,
    query_token: Option<&str>,
    port: u16,
    token: &str,
) -> Result<(), Refusal> {
    let hosts = own_hosts(port);
    let host = headers.get(HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|host| hosts.iter().any(|own| own.eq_ignore_ascii_case(host))) {
        return Err(Refusal::Host);
    }
    let mut origins = headers.get_all(ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let origin = origin.to_str().map_err(|_| Refusal::Origin)?;
        let own = hosts
            .iter()
            .any(|h| origin.eq_ignore_ascii_case(&format!("http://{h}")));
        if !own || origins.next().is_some() {
            return Err(Refusal::Origin);
        }
    }
    if headers
        .get("sec-fetch-site")
        .is_some_and(|site| site.as_bytes() == b"cross-site" || site.as_bytes() == b"same-site")
    {
        return Err(Refusal::Origin);
    }
    match query_token {
        Some(given) if same_secret(given.as_bytes(), token.as_bytes()) => Ok(()),
        _ => Err(Refusal::Token),
    }
}

/// Compares in time that depends on the length only.
fn same_secret(given: &[u8], token: &[u8]) -> bool {
    given.len() == token.len() && given.iter().zip(token).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}

/// A fresh token: 32 bytes from the kernel, as hex.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    const PORT: u16 = 40123;
    const TOKEN: &str = "a1b2c3";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn admits_own_host_own_origin_and_token() {
        for host in ["127.0.0.1:40123", "localhost:40123", "LOCALHOST:40123"] {
            let h = headers(&[("host", host), ("origin", "http://127.0.0.1:40123")]);
            assert_eq!(admit(&h, Some(TOKEN), PORT, TOKEN), Ok(()));
        }
        let h = headers(&[
            ("host", "127.0.0.1:40123"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(admit(&h, Some(TOKEN), PORT, TOKEN), Ok(()));
    }

    #[test]
    fn refuses_a_rebound_or_missing_host() {
        for host in [
            "evil.example:40123",
            "127.0.0.1",
            "127.0.0.1:40124",
            "127.0.0.1.evil.example:40123",
            "[::1]:40123",
        ] {
            let h = headers(&[("host", host)]);
            assert_eq!(
                admit(&h, Some(TOKEN), PORT, TOKEN),
                Err(Refusal::Host),
                "{host}"
            );
        }
        assert_eq!(
            admit(&HeaderMap::new(), Some(TOKEN), PORT, TOKEN),
            Err(Refusal::Host)
        );
    }

    #[test]
    fn refuses_a_foreign_origin() {
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:40123",
            "http://127.0.0.1:40124",
        ] {
            let h = headers(&[("host", "127.0.0.1:40123"), ("origin", origin)]);
            assert_eq!(
                admit(&h, Some(TOKEN), PORT, TOKEN),
                Err(Refusal::Origin),
                "{origin}"
            );
        }
        let two = headers(&[
            ("host", "127.0.0.1:40123"),
            ("origin", "http://127.0.0.1:40123"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(admit(&two, Some(TOKEN), PORT, TOKEN), Err(Refusal::Origin));
        let cross = headers(&[
            ("host", "127.0.0.1:40123"),
            ("sec-fetch-site", "cross-site"),
        ]);
        assert_eq!(
            admit(&cross, Some(TOKEN), PORT, TOKEN),
            Err(Refusal::Origin)
        );
    }

    #[test]
    fn refuses_a_missing_or_wrong_token() {
        let h = headers(&[("host", "127.0.0.1:40123")]);
        for given in [
            None,
            Some(""),
            Some("a1b2c4"),
            Some("a1b2c"),
            Some("a1b2c3d"),
        ] {
            assert_eq!(
                admit(&h, given, PORT, TOKEN),
                Err(Refusal::Token),
                "{given:?}"
            );
        }
    }

    #[test]
    fn tokens_are_fresh_each_start() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
