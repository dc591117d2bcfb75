//! What can go wrong reading or writing a message.

use std::io;

use super::message::{MessageType, Response, ResponseBody, TokenAnswer};
use floodgate_core::cluster::TokenStatus;

/// Why a frame's content is not a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The message ends before a field it announces.
    #[error("the message ends early")]
    Truncated,
    /// Bytes follow the last field.
    #[error("{0} bytes follow the message")]
    Trailing(usize),
    /// A length field is negative.
    #[error("length {0} is negative")]
    BadLength(i32),
    /// A string is not UTF-8.
    #[error("a string is not UTF-8")]
    NotUtf8,
    /// A boolean's byte is neither 0 nor 1.
    #[error("a boolean is {0}, not 0 or 1")]
    BadBool(u8),
    /// A parameter's type tag is not one of 0–7.
    #[error("unknown parameter type {0}")]
    UnknownParamTag(u8),
    /// The message type is not one this side serves.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// A response's status is not a [`TokenStatus`] code.
    #[error("unknown status {0}")]
    UnknownStatus(i8),
    /// A ping names no namespace.
    #[error("a ping without a namespace")]
    NoNamespace,
    /// A hot-parameter request announces no parameter, or fewer than none.
    #[error("a hot-parameter request with {0} parameters")]
    BadParamCount(i32),
}

/// A request frame whose content could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedRequest {
    /// The request's id, if its head could be read.
    pub xid: Option<i32>,
    /// The request's type byte, if its head could be read.
    pub msg_type: Option<u8>,
    /// What is wrong with it.
    pub error: DecodeError,
}

impl MalformedRequest {
    /// What a server answers: a ping gets a bad ping answer (status −1, no count), a token request
    /// [`TokenStatus::BadRequest`], a request of an unknown type its head back with status −1. `None`
    /// when not even the head could be read (there is no id to answer to: the request is dropped).
    pub fn answer(&self) -> Option<Response> {
        let xid = self.xid?;
        let msg_type = self.msg_type?;
        let (status, body) = match MessageType::from_byte(msg_type) {
            Some(MessageType::Ping) => (TokenStatus::Fail, ResponseBody::Ping { connected: None }),
            Some(MessageType::Flow) => (
                TokenStatus::BadRequest,
                ResponseBody::Flow(TokenAnswer::NONE),
            ),
            Some(MessageType::ParamFlow) => (
                TokenStatus::BadRequest,
                ResponseBody::ParamFlow(TokenAnswer::NONE),
            ),
            None => (TokenStatus::Fail, ResponseBody::Unsupported { msg_type }),
        };
        Some(Response { xid, status, body })
    }
}

/// The connection cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// Reading or writing the socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A frame longer than the protocol allows was received or was to be sent.
    #[error("a frame of {len} bytes is longer than the {max} the protocol allows", max = super::MAX_FRAME_LEN)]
    FrameTooLong {
        /// The frame's length.
        len: usize,
    },
    /// A response could not be read.
    #[error("malformed response: {0}")]
    MalformedResponse(DecodeError),
}
