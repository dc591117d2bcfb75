//! Heartbeats: what a machine must say to be registered, and who may register at all.
//!
//! A heartbeat names the app, the machine's IP and command port, its host name and Sentinel version.
//! Every field is checked (an IP literal, not unspecified or multicast; a port in 1–65535; lengths;
//! no control characters). When the dashboard has a registration token, a heartbeat must carry it; when
//! it has an allow-list of networks, the reported IP must be in one. The dashboard only ever calls the
//! IP and port of a registered machine, so a stranger cannot make it connect elsewhere.

use std::net::IpAddr;

use ipnet::IpNet;
use sha2::{Digest, Sha256};

use crate::error::FieldError;

/// The longest app or host name accepted (Sentinel's limit).
pub const MAX_NAME_LEN: usize = 256;
/// The longest Sentinel version string accepted.
pub const MAX_VERSION_LEN: usize = 32;
/// The longest agent token accepted.
pub const MAX_TOKEN_LEN: usize = 256;

/// A heartbeat that passed every check.
#[derive(Clone, PartialEq, Eq)]
pub struct Registration {
    /// The app.
    pub app: String,
    /// 0 (common) or 1 (gateway).
    pub app_type: i64,
    /// The host name (may be empty).
    pub hostname: String,
    /// The machine's IP.
    pub ip: IpAddr,
    /// Its command port.
    pub port: u16,
    /// Its Sentinel version (`unknown` when not sent).
    pub sentinel_version: String,
    /// The token it sent, if any.
    pub token: Option<String>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("app", &self.app)
            .field("ip", &self.ip)
            .field("port", &self.port)
            .field("hostname", &self.hostname)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

fn invalid(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        index: None,
        field: field.to_owned(),
        message: message.into(),
    }
}

fn text(field: &str, value: &str, max: usize, required: bool) -> Result<String, FieldError> {
    let value = value.trim();
    if required && value.is_empty() {
        return Err(invalid(field, "is required"));
    }
    if value.chars().count() > max {
        return Err(invalid(field, format!("is longer than {max} characters")));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(field, "contains control characters"));
    }
    Ok(value.to_owned())
}

/// Reads a heartbeat's parameters (query string and form, merged; the last of a repeated name wins).
pub fn parse_heartbeat(params: &[(String, String)]) -> Result<Registration, FieldError> {
    let get = |name: &str| {
        params
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let app = text("app", get("app").unwrap_or(""), MAX_NAME_LEN, true)?;
    // `.` and `..` cannot be one segment of a page's URL: a browser resolves them away.
    if app == "." || app == ".." {
        return Err(invalid("app", "must not be `.` or `..`"));
    }
    let app_type = match get("app_type").map(str::trim) {
        None | Some("") | Some("0") => 0,
        Some("1") => 1,
        Some(_) => return Err(invalid("app_type", "must be 0 or 1")),
    };
    let hostname = text(
        "hostname",
        get("hostname").unwrap_or(""),
        MAX_NAME_LEN,
        false,
    )?;
    let ip_text = get("ip").map(str::trim).unwrap_or("");
    if ip_text.is_empty() {
        return Err(invalid("ip", "is required"));
    }
    let ip: IpAddr = ip_text
        .parse()
        .map_err(|_| invalid("ip", "must be an IPv4 or IPv6 address"))?;
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    if ip.is_unspecified() || ip.is_multicast() || ip == IpAddr::from([255, 255, 255, 255]) {
        return Err(invalid("ip", "must be the address of one machine"));
    }
    let port = match get("port").map(str::trim) {
        None | Some("") => return Err(invalid("port", "is required")),
        Some("-1") => return Err(invalid("port", "your port not set yet")),
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| invalid("port", "must be a port number in 1–65535"))?,
    };
    let sentinel_version = match get("v").map(str::trim) {
        None | Some("") => "unknown".to_owned(),
        Some(v) => {
            if v.len() > MAX_VERSION_LEN
                || !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
            {
                return Err(invalid("v", "must be a version such as 1.8.9"));
            }
            v.to_owned()
        }
    };
    if let Some(version) = get("version").map(str::trim).filter(|v| !v.is_empty())
        && version.parse::<u64>().is_err()
    {
        return Err(invalid("version", "must be a time in milliseconds"));
    }
    let token = match get("token") {
        None | Some("") => None,
        Some(t) if t.len() > MAX_TOKEN_LEN || t.chars().any(char::is_control) => {
            return Err(invalid("token", "is not a valid token"));
        }
        Some(t) => Some(t.to_owned()),
    };
    Ok(Registration {
        app,
        app_type,
        hostname,
        ip,
        port,
        sentinel_version,
        token,
    })
}

/// Why a valid heartbeat was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The registration token is configured and the heartbeat's is missing or different.
    #[error("registration token missing or wrong")]
    Token,
    /// The reported IP is outside every allowed network.
    #[error("address not allowed")]
    Address,
}

/// Who may register: the optional token and the optional networks.
#[derive(Clone, Default)]
pub struct Gate {
    token_digest: Option<[u8; 32]>,
    allow: Vec<IpNet>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("token", &self.token_digest.map(|_| "…"))
            .field("allow", &self.allow)
            .finish()
    }
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

impl Gate {
    /// A gate with `token` (if any) and `allow` (empty: any address).
    pub fn new(token: Option<&str>, allow: Vec<IpNet>) -> Self {
        Gate {
            token_digest: token.filter(|t| !t.is_empty()).map(digest),
            allow,
        }
    }

    /// Whether `registration` may register.
    pub fn admit(&self, registration: &Registration) -> Result<(), Refusal> {
        if let Some(expected) = &self.token_digest {
            // Compared as digests: equal-length values, and the time taken tells nothing of the token.
            let given = registration.token.as_deref().map(digest);
            if given.as_ref() != Some(expected) {
                return Err(Refusal::Token);
            }
        }
        if !self.may_call(registration.ip) {
            return Err(Refusal::Address);
        }
        Ok(())
    }

    /// Whether the dashboard may call `ip` (checked again at every call, so that narrowing the
    /// allow-list takes effect on machines registered before).
    pub fn may_call(&self, ip: IpAddr) -> bool {
        self.allow.is_empty() || self.allow.iter().any(|net| net.contains(&ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn java() -> Vec<(String, String)> {
        params(&[
            ("app", "sentinel-demo-app"),
            ("hostname", "vm"),
            ("app_type", "0"),
            ("port", "28719"),
            ("v", "1.8.9"),
            ("ip", "127.0.0.1"),
            ("version", "1796150308164"),
        ])
    }

    #[test]
    fn a_java_heartbeat_registers() {
        let r = parse_heartbeat(&java()).unwrap();
        assert_eq!(r.app, "sentinel-demo-app");
        assert_eq!(r.ip, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(r.port, 28719);
        assert_eq!(r.sentinel_version, "1.8.9");
        assert_eq!(r.token, None);
    }

    fn field_of(mut p: Vec<(String, String)>, name: &str, value: &str) -> String {
        p.retain(|(k, _)| k != name);
        p.push((name.to_owned(), value.to_owned()));
        parse_heartbeat(&p).unwrap_err().field
    }

    #[test]
    fn every_field_is_checked() {
        assert_eq!(field_of(java(), "app", ""), "app");
        assert_eq!(field_of(java(), "app", &"a".repeat(257)), "app");
        assert_eq!(field_of(java(), "app", "a\u{7}b"), "app");
        assert_eq!(field_of(java(), "app", ".."), "app");
        assert_eq!(field_of(java(), "app", ".."), "app");
        assert_eq!(field_of(java(), "ip", "host:8080#"), "ip");
        assert_eq!(field_of(java(), "ip", "example.com"), "ip");
        assert_eq!(field_of(java(), "ip", "0.0.0.0"), "ip");
        assert_eq!(field_of(java(), "ip", "fe80::1%eth0"), "ip");
        assert_eq!(field_of(java(), "port", "-1"), "port");
        assert_eq!(field_of(java(), "port", "0"), "port");
        assert_eq!(field_of(java(), "port", "65536"), "port");
        assert_eq!(field_of(java(), "port", "80;x"), "port");
        assert_eq!(field_of(java(), "hostname", &"h".repeat(300)), "hostname");
        assert_eq!(field_of(java(), "v", "<script>"), "v");
        assert_eq!(field_of(java(), "app_type", "7"), "app_type");
        assert_eq!(field_of(java(), "version", "soon"), "version");
    }

    #[test]
    fn ipv6_and_mapped_addresses() {
        let mut p = java();
        p.push(("ip".into(), "::1".into()));
        assert_eq!(parse_heartbeat(&p).unwrap().ip.to_string(), "::1");
        p.push(("ip".into(), "::ffff:10.1.2.3".into()));
        assert_eq!(parse_heartbeat(&p).unwrap().ip.to_string(), "10.1.2.3");
    }

    #[test]
    fn the_gate_checks_token_and_networks() {
        let mut r = parse_heartbeat(&java()).unwrap();
        let open = Gate::default();
        assert_eq!(open.admit(&r), Ok(()));
        let gate = Gate::new(Some("s3cret-token"), vec!["10.0.0.0/8".parse().unwrap()]);
        assert_eq!(gate.admit(&r), Err(Refusal::Token));
        r.token = Some("wrong".into());
        assert_eq!(gate.admit(&r), Err(Refusal::Token));
        r.token = Some("s3cret-token".into());
        assert_eq!(gate.admit(&r), Err(Refusal::Address));
        r.ip = "10.9.8.7".parse().unwrap();
        assert_eq!(gate.admit(&r), Ok(()));
        assert!(!gate.may_call("192.168.1.1".parse().unwrap()));
    }
}
