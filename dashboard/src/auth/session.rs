//! The secrets of sign-in: random session and API-token secrets, their SHA-256 digests (all the
//! database ever stores), the session cookie, and reading a cookie or a bearer token off a request.
//!
//! A session cookie carries 32 random bytes in hex; the `sessions` row is keyed by the hex SHA-256
//! of that string, so a copy of the database does not sign anyone in. API tokens are `fgt_` and 32
//! random bytes in hex, stored the same way.

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

/// The name of the session cookie.
pub const SESSION_COOKIE: &str = "floodgate_session";

/// What every API token starts with.
pub const TOKEN_PREFIX: &str = "fgt_";

/// The header a session's state-changing request carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The bytes of randomness in a session secret, a CSRF token or an API token.
const SECRET_BYTES: usize = 32;

/// The operating system gave no randomness.
#[derive(Debug, thiserror::Error)]
#[error("no randomness available: {0}")]
pub struct RandomError(getrandom::Error);

/// `N` random bytes from the operating system.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], RandomError> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(RandomError)?;
    Ok(buf)
}

/// A new random secret: 32 bytes in lowercase hex (64 characters).
pub fn new_secret() -> Result<String, RandomError> {
    Ok(hex(&random_bytes::<SECRET_BYTES>()?))
}

/// A new API token: `fgt_` and a [`new_secret`].
pub fn new_api_token() -> Result<String, RandomError> {
    Ok(format!("{TOKEN_PREFIX}{}", new_secret()?))
}

/// The lowercase hex SHA-256 of `secret`: how a session secret or an API token is stored.
pub fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ: the SHA-256
/// digests of both are compared byte by byte without stopping early.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    let da = Sha256::digest(a.as_bytes());
    let db = Sha256::digest(b.as_bytes());
    da.iter()
        .zip(db.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// `bytes` in lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// The `Set-Cookie` value of a session cookie carrying `secret` for `max_age_secs`.
pub fn session_cookie(secret: &str, max_age_secs: u64, secure: bool) -> String {
    format!(
        "{SESSION_COOKIE}={secret}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age_secs}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_session_cookie(secure: bool) -> String {
    session_cookie("", 0, secure)
}

/// The value of the first cookie named `name` in the request's `Cookie` headers.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim().trim_matches('"'))
}

/// The session secret the request presents, when it has a non-empty session cookie.
pub fn session_secret(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, SESSION_COOKIE).filter(|s| !s.is_empty())
}

/// What the request's `Authorization` header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearer<'h> {
    /// No `Authorization` header.
    Absent,
    /// `Bearer fgt_…`: an API token.
    Token(&'h str),
    /// Some other `Authorization` header (another scheme, not a Floodgate token, not ASCII).
    Malformed,
}

/// Reads the request's `Authorization: Bearer fgt_…` header.
pub fn bearer(headers: &HeaderMap) -> Bearer<'_> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Bearer::Absent;
    };
    let Ok(value) = value.to_str() else {
        return Bearer::Malformed;
    };
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && token.trim().starts_with(TOKEN_PREFIX) =>
        {
            Bearer::Token(token.trim())
        }
        _ => Bearer::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn secrets_are_64_hex_digits_and_differ() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(new_api_token().unwrap().starts_with("fgt_"));
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq("x", "x"));
        assert!(!constant_time_eq("x", "y"));
        assert!(!constant_time_eq("x", ""));
    }

    #[test]
    fn cookie_is_found_among_others_and_in_several_headers() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; b=2"));
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("floodgate_session=abc ; c=3"),
        );
        assert_eq!(session_secret(&headers), Some("abc"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "d"), None);
        let mut empty = HeaderMap::new();
        empty.insert(
            header::COOKIE,
            HeaderValue::from_static("floodgate_session="),
        );
        assert_eq!(session_secret(&empty), None);
    }

    #[test]
    fn cookie_attributes() {
        let c = session_cookie("s", 60, true);
        assert_eq!(
            c,
            "floodgate_session=s; HttpOnly; SameSite=Strict; Path=/; Max-Age=60; Secure"
        );
        assert!(!clear_session_cookie(false).contains("Secure"));
        assert!(clear_session_cookie(false).contains("Max-Age=0"));
    }

    #[test]
    fn bearer_tokens() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), Bearer::Absent);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer fgt_ab"),
        );
        assert_eq!(bearer(&headers), Bearer::Token("fgt_ab"));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic YTpi"),
        );
        assert_eq!(bearer(&headers), Bearer::Malformed);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer xyz"),
        );
        assert_eq!(bearer(&headers), Bearer::Malformed);
    }
}
