//! A tonic gRPC service guarded by Floodgate's tower layer: `/hello.Greeter/SayHello` limited to 3 calls
//! a second. The service is written by hand (no protobuf code generation), then a tonic client calls it
//! five times; the last two get `RESOURCE_EXHAUSTED`.
//!
//! Run with `cargo run --example tonic_service --features tower`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use floodgate::tower::FloodgateLayer;
use floodgate::{BlockError, BlockKind, Floodgate, RuleType};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::body::Body;
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

#[derive(Clone, PartialEq, prost::Message)]
struct HelloRequest {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HelloReply {
    #[prost(string, tag = "1")]
    message: String,
}

const SAY_HELLO: &str = "/hello.Greeter/SayHello";

/// The handler.
struct SayHello;

impl UnaryService<HelloRequest> for SayHello {
    type Response = HelloReply;
    type Future = Pin<Box<dyn Future<Output = Result<Response<HelloReply>, Status>> + Send>>;

    fn call(&mut self, request: Request<HelloRequest>) -> Self::Future {
        let name = request.into_inner().name;
        Box::pin(async move {
            Ok(Response::new(HelloReply {
                message: format!("hello, {name}"),
            }))
        })
    }
}

/// The service: routes `SayHello`, answers UNIMPLEMENTED otherwise.
#[derive(Clone)]
struct Greeter;

impl NamedService for Greeter {
    const NAME: &'static str = "hello.Greeter";
}

impl tower_service::Service<http::Request<Body>> for Greeter {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        Box::pin(async move {
            if request.uri().path() == SAY_HELLO {
                let mut grpc = Grpc::new(ProstCodec::<HelloReply, HelloRequest>::default());
                Ok(grpc.unary(SayHello, request).await)
            } else {
                Ok(Status::unimplemented("no such method").into_http())
            }
        })
    }
}

/// A blocked call becomes a gRPC status, not an HTTP error page.
fn grpc_block(block: &BlockError) -> http::Response<Body> {
    let status = match block.kind() {
        BlockKind::Flow | BlockKind::ParamFlow => Status::resource_exhausted(block.to_string()),
        BlockKind::Authority => Status::permission_denied(block.to_string()),
        _ => Status::unavailable(block.to_string()),
    };
    status.into_http()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fg = Floodgate::default();
    fg.load_rules_json(
        RuleType::Flow,
        &format!(r#"[{{"resource":"{SAY_HELLO}","count":3}}]"#),
    )?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let layer = FloodgateLayer::new(fg.clone()).on_block(grpc_block);
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(layer)
            .add_service(Greeter)
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );

    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = tonic::client::Grpc::new(channel);
    for i in 1..=5 {
        client.ready().await?;
        let request = Request::new(HelloRequest {
            name: format!("caller {i}"),
        });
        let reply = client
            .unary(
                request,
                http::uri::PathAndQuery::from_static(SAY_HELLO),
                ProstCodec::<HelloRequest, HelloReply>::default(),
            )
            .await;
        match reply {
            Ok(reply) => println!("call {i}: {}", reply.into_inner().message),
            Err(status) => println!("call {i}: {:?}: {}", status.code(), status.message()),
        }
    }
    Ok(())
}
