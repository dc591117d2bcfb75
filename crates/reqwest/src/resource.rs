//! Naming an outgoing call's resource with a bounded number of names.

/// `METHOD:host[:port]/path`, where path segments that are numbers or UUID-like (hex with dashes, 16+
/// characters) become `{id}`, and the query string is left out.
pub fn resource_name(request: &reqwest::Request) -> String {
    let url = request.url();
    let mut name = format!("{}:{}", request.method(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        name.push(':');
        name.push_str(&port.to_string());
    }
    for segment in url.path().split('/').skip(1) {
        name.push('/');
        if looks_like_id(segment) {
            name.push_str("{id}");
        } else {
            name.push_str(segment);
        }
    }
    name
}

fn looks_like_id(segment: &str) -> bool {
    if segment.is_empty() {
        return false;
    }
    segment.bytes().all(|b| b.is_ascii_digit())
        || (segment.len() >= 16 && segment.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(method: reqwest::Method, url: &str) -> String {
        resource_name(&reqwest::Request::new(method, url.parse().unwrap()))
    }

    #[test]
    fn ids_become_placeholders() {
        assert_eq!(
            name(
                reqwest::Method::GET,
                "http://users.svc:8080/users/42/orders?page=2"
            ),
            "GET:users.svc:8080/users/{id}/orders"
        );
        assert_eq!(
            name(
                reqwest::Method::DELETE,
                "https://api.example/v1/items/3f2b9c1e-8d4a-4b6f-9e2d-1a2b3c4d5e6f"
            ),
            "DELETE:api.example/v1/items/{id}"
        );
        assert_eq!(name(reqwest::Method::POST, "http://h/"), "POST:h/");
    }
}
