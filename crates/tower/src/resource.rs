//! Naming a request's resource: a route template, never the raw path with ids and query strings.

use std::fmt;
use std::sync::LazyLock;

use http::{Extensions, HeaderMap, Method, Uri};

/// What a resource-naming function sees of a request.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    /// The method.
    pub method: &'a Method,
    /// The URI (path and query: do not use them raw as a resource name).
    pub uri: &'a Uri,
    /// The headers.
    pub headers: &'a HeaderMap,
    /// The extensions (axum's `MatchedPath` lives here).
    pub extensions: &'a Extensions,
}

/// The default resource name: `METHOD:template` from axum's `MatchedPath` (feature `axum`); the method
/// path for gRPC calls (`POST /package.Service/Method` with `content-type: application/grpc…`);
/// `METHOD:/*` otherwise — so the number of
/// resources stays bounded by the number of routes. Methods other than the eight of RFC 9110 and PATCH are named
/// `_OTHER` (as OpenTelemetry's HTTP conventions do): clients choose them, so each must not make a
/// resource of its own.
pub fn resource_name(head: &RequestHead<'_>) -> String {
    NameParts::of(head).to_string()
}

/// What the default name is made of: the method (absent for gRPC, whose path names the method) and a
/// route template or path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NameParts<'a> {
    pub(crate) method: Option<&'a Method>,
    pub(crate) route: &'a str,
    /// axum's matched path, when the route is its template (the route names remember it).
    #[cfg(feature = "axum")]
    pub(crate) matched: Option<&'a axum::extract::MatchedPath>,
}

impl<'a> NameParts<'a> {
    /// A method and a route that is not axum's template.
    pub(crate) fn new(method: Option<&'a Method>, route: &'a str) -> Self {
        NameParts {
            method,
            route,
            #[cfg(feature = "axum")]
            matched: None,
        }
    }

    pub(crate) fn of(head: &RequestHead<'a>) -> Self {
        // axum serves HEAD with the GET handler: one resource, as in
        // Sentinel, whose web names carry no method; else HEAD requests get around GET's rules.
        let method = match head.method {
            &Method::HEAD => &Method::GET,
            other => known_method(other),
        };
        #[cfg(feature = "axum")]
        if let Some(path) = head.extensions.get::<axum::extract::MatchedPath>() {
            // A gRPC service mounted in an axum router (tonic's `into_axum_router`) matches a
            // catch-all route per service: its methods are named by their paths, as outside axum.
            if !(is_grpc_service_route(path.as_str()) && is_grpc(head)) {
                return NameParts {
                    method: Some(method),
                    route: path.as_str(),
                    matched: Some(path),
                };
            }
        }
        if is_grpc(head) && head.method == Method::POST && is_grpc_method_path(head.uri.path()) {
            return NameParts::new(None, head.uri.path());
        }
        NameParts::new(Some(method), "/*")
    }
}

/// Whether an axum route template is the one tonic mounts a gRPC service at: `/{package.Service}/{*rest}`
/// (a literal service name with a dot, then a catch-all). Only there does a gRPC request get its method
/// path as its name: on any other catch-all route a client could otherwise pick names (and escape the
/// route's rules) by sending a gRPC content type. A service without a package (no dot: `/Greeter/{*rest}`)
/// or nested under a prefix keeps the route's one name for all its methods. Cheap for the usual
/// template: this runs for every request.
fn is_grpc_service_route(template: &str) -> bool {
    let bytes = template.as_bytes();
    if bytes.last() != Some(&b'}') {
        return false;
    }
    let Some(rest) = template.strip_prefix('/') else {
        return false;
    };
    let Some((service, last)) = rest.split_once('/') else {
        return false;
    };
    last.starts_with("{*")
        && !last[2..].contains('/')
        && service.contains('.')
        && !service.contains(['{', '}'])
}

/// Whether a path has a gRPC method's shape, `/package.Service/Method` (the service's name with a dot,
/// as in [`is_grpc_service_route`]): the content type alone is the client's word, and with it any path
/// (`/orders/1` of a route under an HTTP rule) would be named by itself, escaping the rule
/// (`a_grpc_content_type_does_not_rename_an_http_request`).
fn is_grpc_method_path(path: &str) -> bool {
    let Some((service, method)) = path.strip_prefix('/').and_then(|rest| rest.split_once('/'))
    else {
        return false;
    };
    service.contains('.') && !method.is_empty() && !method.contains('/')
}

/// Whether the request is a gRPC call (by its content type).
fn is_grpc(head: &RequestHead<'_>) -> bool {
    head.headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// The methods of RFC 9110 (and PATCH) name themselves; any other is [`OTHER`].
pub(crate) const STANDARD_METHODS: [Method; 9] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::PATCH,
    Method::HEAD,
    Method::OPTIONS,
    Method::CONNECT,
    Method::TRACE,
];

/// The name shared by extension methods.
static OTHER: LazyLock<Method> =
    LazyLock::new(|| Method::from_bytes(b"_OTHER").unwrap_or(Method::OPTIONS));

/// `method`, if it is one of the [`STANDARD_METHODS`]; else [`OTHER`].
fn known_method(method: &Method) -> &Method {
    if STANDARD_METHODS.contains(method) {
        method
    } else {
        &OTHER
    }
}

impl fmt::Display for NameParts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.method {
            Some(method) => write!(f, "{method}:{}", self.route),
            None => f.write_str(self.route),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_grpc_service_route;

    #[test]
    fn grpc_service_routes() {
        assert!(is_grpc_service_route("/hello.Greeter/{*rest}"));
        assert!(!is_grpc_service_route("/api/{*rest}"), "no service name");
        assert!(!is_grpc_service_route("/{*path}"));
        assert!(!is_grpc_service_route("/a.b/c/{*rest}"));
        assert!(!is_grpc_service_route("/{svc}.x/{*rest}"));
        assert!(!is_grpc_service_route("/orders/{id}"));
        assert!(!is_grpc_service_route("/"));
        assert!(!is_grpc_service_route(""));
    }
}
