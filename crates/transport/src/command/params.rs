//! A command request's parameters, decoded once from its query string and its form body.
//!
//! Both are `application/x-www-form-urlencoded` (the WHATWG rules, which Sentinel's dashboard and
//! every HTTP client follow): pairs are split on `&`, a key from its value on the first `=`, `+`
//! is a space and `%XX` the byte `XX`; a `%` not followed by two hex digits is kept as it is. The
//! decoded bytes of every key and value must be UTF-8: a parameter that is not is refused, by name,
//! rather than turned into U+FFFD (a rule whose resource quietly became another name would never
//! match). Keys are trimmed and pairs with an empty key dropped; values are kept exactly as sent (a
//! resource may be named `" a "`); keywords and numbers are trimmed where they are read
//! ([`Params::word`]). At most [`MAX_PARAMS`] pairs are accepted. A key given twice means its last
//! value.

use thiserror::Error;

/// The most parameters a request may carry (Sentinel's commands take a handful).
pub(crate) const MAX_PARAMS: usize = 64;

/// Why a request's parameters were refused (answered 400 with this text).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum ParamError {
    /// More than [`MAX_PARAMS`] pairs.
    #[error("at most {MAX_PARAMS} parameters are accepted")]
    TooMany,
    /// A key or value whose decoded bytes are not UTF-8 (the name as far as it is readable).
    #[error("parameter `{0}` is not UTF-8 text once percent-decoded")]
    NotUtf8(String),
}

/// The decoded parameters of one request.
#[derive(Debug, Default)]
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    /// Adds the pairs of `form`. On an error nothing past the offending pair is kept (the request is
    /// refused anyway).
    pub(crate) fn extend_from_form(&mut self, form: &[u8]) -> Result<(), ParamError> {
        for pair in form.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
            let (key, value) = match pair.iter().position(|&b| b == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &[][..]),
            };
            let key = decode(key);
            let key = match String::from_utf8(key) {
                Ok(key) => key,
                Err(e) => {
                    return Err(ParamError::NotUtf8(
                        String::from_utf8_lossy(e.as_bytes()).trim().to_owned(),
                    ));
                }
            };
            let key = key.trim();
            if key.is_empty() {
                continue;
            }
            let value = String::from_utf8(decode(value))
                .map_err(|_| ParamError::NotUtf8(key.to_owned()))?;
            if self.0.len() == MAX_PARAMS {
                return Err(ParamError::TooMany);
            }
            self.0.push((key.to_owned(), value));
        }
        Ok(())
    }

    /// The last value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The last value of `key`, trimmed: for keywords, numbers and tokens.
    pub(crate) fn word(&self, key: &str) -> Option<&str> {
        self.get(key).map(str::trim)
    }

    /// The value of `key` as sent, if present and not empty (a name may be all spaces).
    pub(crate) fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// The value of `key` as sent, if present and not blank.
    pub(crate) fn non_blank(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.trim().is_empty())
    }

    /// How many pairs were kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// One key or value, `+` as a space and `%XX` as its byte (a `%` without two hex digits is kept).
fn decode(part: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(part.len());
    let mut i = 0;
    while let Some(&b) = part.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => match (
                part.get(i + 1).copied().and_then(hex),
                part.get(i + 2).copied().and_then(hex),
            ) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            _ => out.push(b),
        }
        i += 1;
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(form: &[u8]) -> Result<Params, ParamError> {
        let mut p = Params::default();
        p.extend_from_form(form).map(|()| p)
    }

    #[test]
    fn params_decode_once() {
        let p = parse(b"data=%5B%7B%22resource%22%3A%22a%2Bb%22%7D%5D&type=flow&x=").unwrap();
        assert_eq!(p.get("data"), Some(r#"[{"resource":"a+b"}]"#));
        assert_eq!(p.get("type"), Some("flow"));
        assert_eq!(p.non_blank("x"), None);
    }

    #[test]
    fn plus_percent_and_truncated_escapes() {
        let p = parse(b"a=x+y&b=x%2By&c=100%25&d=50%&e=%4&f=%zz&g=%e2%82%ac").unwrap();
        assert_eq!(p.get("a"), Some("x y"));
        assert_eq!(p.get("b"), Some("x+y"));
        assert_eq!(p.get("c"), Some("100%"));
        assert_eq!(p.get("d"), Some("50%"), "a trailing % is kept");
        assert_eq!(p.get("e"), Some("%4"));
        assert_eq!(p.get("f"), Some("%zz"));
        assert_eq!(p.get("g"), Some("€"));
    }

    /// form_urlencoded's parse turned bytes that are not UTF-8 into U+FFFD, silently: a rule's
    /// resource became another name.
    #[test]
    fn bytes_that_are_not_utf8_are_refused_by_name() {
        assert_eq!(
            parse(b"type=flow&data=%5B%22%FF%22%5D").unwrap_err(),
            ParamError::NotUtf8("data".to_owned())
        );
        assert_eq!(
            parse(b"type=flow&data=\xff").unwrap_err().to_string(),
            "parameter `data` is not UTF-8 text once percent-decoded"
        );
        assert!(matches!(
            parse(b"da%FFta=1").unwrap_err(),
            ParamError::NotUtf8(name) if name == "da\u{fffd}ta"
        ));
        // U+FFFD sent as such is text like any other.
        assert_eq!(parse(b"a=%EF%BF%BD").unwrap().get("a"), Some("\u{fffd}"));
    }

    #[test]
    fn keys_are_trimmed_empty_ones_dropped_and_the_last_value_wins() {
        let p = parse(b"=1&%20=2&&a=1&+a+=2&b").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.get("a"), Some("2"));
        assert_eq!(p.get("b"), Some(""));
    }

    #[test]
    fn at_most_64_pairs() {
        let many = vec!["a=1"; MAX_PARAMS].join("&");
        assert_eq!(parse(many.as_bytes()).unwrap().len(), MAX_PARAMS);
        let more = format!("{many}&b=2");
        assert_eq!(parse(more.as_bytes()).unwrap_err(), ParamError::TooMany);
        let with_empty_keys = format!("{many}&=2&&");
        assert!(
            parse(with_empty_keys.as_bytes()).is_ok(),
            "empty keys are not counted"
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Text with every character the encoding treats specially, and any other.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                proptest::collection::vec(
                    prop_oneof![
                        Just('+'),
                        Just('%'),
                        Just('&'),
                        Just('='),
                        Just(' '),
                        Just('#'),
                        Just('\u{fffd}'),
                        any::<char>(),
                    ],
                    0..24,
                )
                .prop_map(|chars| chars.into_iter().collect()),
                any::<String>(),
            ]
        }

        fn encode(pairs: &[(String, String)]) -> String {
            let mut form = form_urlencoded::Serializer::new(String::new());
            for (k, v) in pairs {
                form.append_pair(k, v);
            }
            form.finish()
        }

        proptest! {
            /// Any bytes: the parameters, or a clear error; never a panic.
            #[test]
            fn any_bytes_parse_or_are_refused_clearly(form in proptest::collection::vec(any::<u8>(), 0..512)) {
                match parse(&form) {
                    Ok(p) => prop_assert!(p.len() <= MAX_PARAMS),
                    Err(ParamError::TooMany) => {}
                    Err(ParamError::NotUtf8(name)) => {
                        prop_assert!(ParamError::NotUtf8(name).to_string().contains("is not UTF-8"));
                    }
                }
            }

            /// Pairs encoded once (as the dashboards send them) come back exactly: the last value of
            /// each key, keys trimmed, values as sent.
            #[test]
            fn encoded_pairs_decode_exactly_once(pairs in proptest::collection::vec((text(), text()), 0..=MAX_PARAMS)) {
                let p = parse(encode(&pairs).as_bytes()).unwrap();
                let kept: Vec<_> = pairs.iter().filter(|(k, _)| !k.trim().is_empty()).collect();
                prop_assert_eq!(p.len(), kept.len());
                for (k, _) in &kept {
                    let last = kept.iter().rev().find(|(k2, _)| k2.trim() == k.trim()).map(|(_, v)| v.as_str());
                    prop_assert_eq!(p.get(k.trim()), last);
                }
            }

            /// A value whose escapes decode to bytes that are not UTF-8 is refused by its key's
            /// name, wherever it is among valid pairs.
            #[test]
            fn invalid_utf8_is_refused_by_name(
                before in proptest::collection::vec((text(), text()), 0..8),
                key in "[a-z]{1,8}",
                bad in prop_oneof![Just("%FF"), Just("%C3%28"), Just("%E2%82"), Just("%80"), Just("a%F0%9F%98")],
                after in proptest::collection::vec((text(), text()), 0..8),
            ) {
                let form = format!("{}&{key}={bad}&{}", encode(&before), encode(&after));
                prop_assert_eq!(parse(form.as_bytes()).unwrap_err(), ParamError::NotUtf8(key));
            }

            /// A `%` not followed by two hex digits is kept as it is, `%25` is a `%`, `+` a space
            /// and `%2B` a `+` (the escapes generated decode to ASCII).
            #[test]
            fn escapes_and_truncated_escapes(value in "([g-z0-7]|%|%[0-7]|%[g-z]{2}|\\+|%2B|%25){0,16}") {
                let p = parse(format!("v={value}").as_bytes()).unwrap();
                let mut expected = String::new();
                let bytes = value.as_bytes();
                let mut i = 0;
                while i < bytes.len() {
                    let escape = bytes.get(i + 1..i + 3)
                        .filter(|h| bytes[i] == b'%' && h.iter().all(u8::is_ascii_hexdigit))
                        .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
                    match (bytes[i], escape) {
                        (_, Some(b)) => { expected.push(char::from(b)); i += 3; }
                        (b'+', None) => { expected.push(' '); i += 1; }
                        (b, None) => { expected.push(char::from(b)); i += 1; }
                    }
                }
                prop_assert_eq!(p.get("v"), Some(expected.as_str()));
            }

            /// More than 64 pairs are refused; empty keys, repeated keys and huge values are fine.
            #[test]
            fn many_repeated_empty_and_huge(
                count in 0usize..150,
                empty in 0usize..20,
                huge in 0usize..200_000,
            ) {
                let mut form = vec!["k=v".to_owned(); count];
                form.extend(std::iter::repeat_n("=x".to_owned(), empty));
                form.push(format!("big={}", "x".repeat(huge)));
                let result = parse(form.join("&").as_bytes());
                if count < MAX_PARAMS {
                    let p = result.unwrap();
                    prop_assert_eq!(p.get("big").map(str::len), Some(huge));
                    prop_assert_eq!(p.get("k"), (count > 0).then_some("v"));
                } else {
                    prop_assert_eq!(result.unwrap_err(), ParamError::TooMany);
                }
            }
        }
    }
}
