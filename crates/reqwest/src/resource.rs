//! Naming an outgoing call's resource with a bounded number of names.

/// `METHOD:host[:port]/path`, where path segments that look like ids become `{id}`, and the query string
/// is left out. A segment looks like an id when it is a number, UUID-like (hex with dashes, 16+
/// characters), has three digits or more (`ord_12345`, `a1b2c3d4e5`, a ULID), or is 24 characters or
/// longer (a token); `v1`, `oauth2` or `base64` stay. Hosts stay as they are: for per-tenant hosts, or
/// ids this cannot tell, name calls with `FloodgateMiddleware::resource_fn` (the engine's resource cap
/// bounds the names either way).
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
    let digits = segment.bytes().filter(u8::is_ascii_digit).count();
    digits == segment.len()
        || digits >= 3
        || segment.len() >= 24
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

    #[test]
    fn ids_of_other_shapes_become_placeholders_too() {
        for (path, named) in [
            ("/files/a1b2c3d4e5", "/files/{id}"),
            ("/o/01ARZ3NDEKTSV4RYFFQ69G5FAV", "/o/{id}"),
            ("/items/ord_12345", "/items/{id}"),
            ("/t/dGhpcy1pcy1hLWxvbmctdG9rZW4", "/t/{id}"),
            ("/v1/oauth2/base64/ipv4", "/v1/oauth2/base64/ipv4"),
            ("/2024/report", "/{id}/report"),
        ] {
            assert_eq!(
                name(reqwest::Method::GET, &format!("http://h{path}")),
                format!("GET:h{named}"),
                "{path}"
            );
        }
    }
}
