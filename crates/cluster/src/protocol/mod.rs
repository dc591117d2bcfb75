//! Sentinel's token protocol (`sentinel-cluster-common-default`), spoken over TCP.
//!
//! Every message is one frame: a 2-byte big-endian length, then that many bytes (at most
//! [`MAX_FRAME_LEN`]: Netty's frame decoder on both Java sides refuses frames of more than 1024 bytes
//! with their length). All integers are big-endian.
//!
//! ```text
//! request   xid:i32  type:u8  data
//!   PING        (type 0)  len:i32  namespace (UTF-8)             sent on connect
//!   FLOW        (type 1)  flow_id:i64  count:i32  prioritized:u8
//!   PARAM_FLOW  (type 2)  flow_id:i64  count:i32  n:i32  n × (tag:u8  value)
//! response  xid:i32  type:u8  status:i8  data
//!   PING        connected:i32 (servers before Sentinel 1.7: one byte); none when the status is bad
//!   FLOW, PARAM_FLOW   remaining:i32  wait_ms:i32
//!   other types        none, status −1
//! ```
//!
//! A parameter's tag gives its type: 0 `i32`, 1 `i64`, 2 `i8`, 3 `f64`, 4 `f32`, 5 `i16`, 6 bool (one
//! byte, 0 or 1), 7 string (`len:i32` and UTF-8 bytes). Statuses are [`TokenStatus`] codes.
//!
//! [`ServerCodec`] and [`ClientCodec`] frame and parse messages for `tokio_util::codec::Framed`. A
//! frame that is too long ends the connection (the peer does not speak the protocol); a frame of the
//! right length whose content is malformed comes out as a [`MalformedRequest`], which a server answers
//! ([`MalformedRequest::answer`]) and the connection goes on, as with a Java server.

mod codec;
mod error;
mod message;
mod param;

pub use codec::{ClientCodec, ServerCodec};
pub use error::{DecodeError, MalformedRequest, ProtocolError};
pub use floodgate_core::cluster::TokenStatus;
pub use message::{
    MAX_FRAME_LEN, MessageType, Request, RequestBody, Response, ResponseBody, TokenAnswer,
};
pub use param::{Param, write_window_key};
