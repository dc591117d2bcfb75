//! The messages: their types, their fields, and how each is written and read inside its frame.

use bytes::{Buf, BufMut};

use super::error::DecodeError;
use super::param::{Param, need, read_bool, read_string};
use floodgate_core::cluster::TokenStatus;

/// The most bytes a frame may hold after its 2-byte length: Java's frame decoder refuses frames of
/// more than 1024 bytes, length included.
pub const MAX_FRAME_LEN: usize = 1022;

/// The head of a request: `xid:i32 type:u8`.
const REQUEST_HEAD: usize = 5;
/// The head of a response: `xid:i32 type:u8 status:i8`.
const RESPONSE_HEAD: usize = 6;
/// A hot-parameter request's fields before its parameters: `flow_id:i64 count:i32 n:i32`.
const PARAM_FLOW_FIELDS: usize = 16;

/// A message's type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// 0: a client names its namespace; the server answers with the namespace's client count.
    Ping,
    /// 1: tokens of a flow rule.
    Flow,
    /// 2: tokens of a hot-parameter rule, for the given argument values.
    ParamFlow,
}

impl MessageType {
    /// The type's byte.
    pub const fn byte(self) -> u8 {
        match self {
            MessageType::Ping => 0,
            MessageType::Flow => 1,
            MessageType::ParamFlow => 2,
        }
    }

    /// The type of a byte, if this protocol serves it (3 and 4, Sentinel's cluster concurrency
    /// messages, have no codec in Sentinel's own transport either).
    pub const fn from_byte(byte: u8) -> Option<MessageType> {
        match byte {
            0 => Some(MessageType::Ping),
            1 => Some(MessageType::Flow),
            2 => Some(MessageType::ParamFlow),
            _ => None,
        }
    }
}

/// A client's request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id its response carries back (a ping sent on connect has 0).
    pub xid: i32,
    /// What it asks.
    pub body: RequestBody,
}

/// What a request asks.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestBody {
    /// The client's namespace (by default its application's name).
    Ping {
        /// Not empty.
        namespace: String,
    },
    /// `count` tokens of the flow rule `flow_id`.
    Flow {
        /// The rule's cluster-wide id.
        flow_id: i64,
        /// Tokens asked for.
        count: i32,
        /// Whether the client may wait for tokens of the next window.
        prioritized: bool,
    },
    /// `count` tokens of the hot-parameter rule `flow_id` for each of `params`.
    ParamFlow {
        /// The rule's cluster-wide id.
        flow_id: i64,
        /// Tokens asked for.
        count: i32,
        /// The argument values (at least one).
        params: Vec<Param>,
    },
}

impl RequestBody {
    /// A hot-parameter request with as many of `params`, in order, as fit in one frame, and how many
    /// did not fit (Java's client drops those past its byte budget the same way, with a warning).
    pub fn param_flow(
        flow_id: i64,
        count: i32,
        params: impl IntoIterator<Item = Param>,
    ) -> (Self, usize) {
        let mut budget = MAX_FRAME_LEN - REQUEST_HEAD - PARAM_FLOW_FIELDS;
        let (mut kept, mut dropped) = (Vec::new(), 0);
        for param in params {
            let len = param.wire_len();
            if dropped == 0 && len <= budget {
                budget -= len;
                kept.push(param);
            } else {
                dropped += 1;
            }
        }
        (
            RequestBody::ParamFlow {
                flow_id,
                count,
                params: kept,
            },
            dropped,
        )
    }

    /// The message type.
    pub fn message_type(&self) -> MessageType {
        match self {
            RequestBody::Ping { .. } => MessageType::Ping,
            RequestBody::Flow { .. } => MessageType::Flow,
            RequestBody::ParamFlow { .. } => MessageType::ParamFlow,
        }
    }
}

impl Request {
    /// The bytes it takes in its frame.
    pub(crate) fn wire_len(&self) -> usize {
        REQUEST_HEAD
            + match &self.body {
                RequestBody::Ping { namespace } => 4 + namespace.len(),
                RequestBody::Flow { .. } => 13,
                RequestBody::ParamFlow { params, .. } => {
                    PARAM_FLOW_FIELDS + params.iter().map(Param::wire_len).sum::<usize>()
                }
            }
    }

    /// Writes the frame's content (not its length).
    pub(crate) fn write(&self, out: &mut impl BufMut) {
        out.put_i32(self.xid);
        out.put_u8(self.body.message_type().byte());
        match &self.body {
            RequestBody::Ping { namespace } => {
                // Written only once the frame is known to fit: the length fits in an i32.
                out.put_i32(namespace.len() as i32);
                out.put_slice(namespace.as_bytes());
            }
            RequestBody::Flow {
                flow_id,
                count,
                prioritized,
            } => {
                out.put_i64(*flow_id);
                out.put_i32(*count);
                out.put_u8(u8::from(*prioritized));
            }
            RequestBody::ParamFlow {
                flow_id,
                count,
                params,
            } => {
                out.put_i64(*flow_id);
                out.put_i32(*count);
                out.put_i32(params.len() as i32);
                for param in params {
                    param.write(out);
                }
            }
        }
    }

    /// Reads a frame's content. A flow request without its priority byte (older clients) is not
    /// prioritized.
    pub(crate) fn read(frame: &[u8]) -> Result<Request, crate::protocol::MalformedRequest> {
        let malformed = |xid, msg_type, error| crate::protocol::MalformedRequest {
            xid,
            msg_type,
            error,
        };
        if frame.len() < REQUEST_HEAD {
            return Err(malformed(None, None, DecodeError::Truncated));
        }
        let mut data = frame;
        let xid = data.get_i32();
        let msg_type = data.get_u8();
        let body = read_request_body(msg_type, &mut data)
            .and_then(|body| finished(data).map(|()| body))
            .map_err(|error| malformed(Some(xid), Some(msg_type), error))?;
        Ok(Request { xid, body })
    }
}

fn read_request_body(msg_type: u8, data: &mut &[u8]) -> Result<RequestBody, DecodeError> {
    match MessageType::from_byte(msg_type) {
        Some(MessageType::Ping) => {
            if data.is_empty() {
                return Err(DecodeError::NoNamespace);
            }
            let namespace = read_string(data)?;
            if namespace.is_empty() {
                return Err(DecodeError::NoNamespace);
            }
            Ok(RequestBody::Ping { namespace })
        }
        Some(MessageType::Flow) => {
            let fields = need(data, 12)?;
            let (flow_id, count) = (fields.get_i64(), fields.get_i32());
            let prioritized = match data.is_empty() {
                true => false,
                false => read_bool(data)?,
            };
            Ok(RequestBody::Flow {
                flow_id,
                count,
                prioritized,
            })
        }
        Some(MessageType::ParamFlow) => {
            let fields = need(data, 16)?;
            let (flow_id, count, n) = (fields.get_i64(), fields.get_i32(), fields.get_i32());
            // Each parameter takes at least two bytes: a count past that is a lie, not an allocation.
            if n <= 0 || n as usize > data.len() / 2 {
                return Err(if n <= 0 {
                    DecodeError::BadParamCount(n)
                } else {
                    DecodeError::Truncated
                });
            }
            let params = (0..n)
                .map(|_| Param::read(data))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RequestBody::ParamFlow {
                flow_id,
                count,
                params,
            })
        }
        None => Err(DecodeError::UnknownType(msg_type)),
    }
}

/// A server's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request it answers.
    pub xid: i32,
    /// How it went.
    pub status: TokenStatus,
    /// What it carries.
    pub body: ResponseBody,
}

/// The tokens left and the wait of a token answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenAnswer {
    /// Tokens left in the window after this request (may be negative).
    pub remaining: i32,
    /// How long a [`TokenStatus::ShouldWait`] request waits, ms.
    pub wait_ms: i32,
}

impl TokenAnswer {
    /// No tokens left and no wait, what a bad answer carries.
    pub const NONE: TokenAnswer = TokenAnswer {
        remaining: 0,
        wait_ms: 0,
    };
}

/// What a response carries, by the type of the request it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseBody {
    /// The clients connected in the namespace; `None` in the answer to a bad ping (the head alone).
    Ping {
        /// The count.
        connected: Option<i32>,
    },
    /// The answer to a flow request.
    Flow(TokenAnswer),
    /// The answer to a hot-parameter request.
    ParamFlow(TokenAnswer),
    /// The answer to a request of a type the server does not serve: the head alone.
    Unsupported {
        /// The request's type byte.
        msg_type: u8,
    },
}

impl Response {
    /// The bytes it takes in its frame.
    pub(crate) fn wire_len(&self) -> usize {
        RESPONSE_HEAD
            + match &self.body {
                ResponseBody::Ping { connected } => connected.map_or(0, |_| 4),
                ResponseBody::Flow(_) | ResponseBody::ParamFlow(_) => 8,
                ResponseBody::Unsupported { .. } => 0,
            }
    }

    /// Writes the frame's content (not its length).
    pub(crate) fn write(&self, out: &mut impl BufMut) {
        let msg_type = match &self.body {
            ResponseBody::Ping { .. } => MessageType::Ping.byte(),
            ResponseBody::Flow(_) => MessageType::Flow.byte(),
            ResponseBody::ParamFlow(_) => MessageType::ParamFlow.byte(),
            ResponseBody::Unsupported { msg_type } => *msg_type,
        };
        out.put_i32(self.xid);
        out.put_u8(msg_type);
        out.put_i8(self.status.code());
        match &self.body {
            ResponseBody::Ping { connected } => {
                if let Some(count) = connected {
                    out.put_i32(*count);
                }
            }
            ResponseBody::Flow(answer) | ResponseBody::ParamFlow(answer) => {
                out.put_i32(answer.remaining);
                out.put_i32(answer.wait_ms);
            }
            ResponseBody::Unsupported { .. } => {}
        }
    }

    /// Reads a frame's content. A ping answer of one byte (servers before Sentinel 1.7) reads as
    /// its count; a token answer without data (a Java server's bad answer) as [`TokenAnswer::NONE`].
    pub(crate) fn read(frame: &[u8]) -> Result<Response, DecodeError> {
        if frame.len() < RESPONSE_HEAD {
            return Err(DecodeError::Truncated);
        }
        let mut data = frame;
        let xid = data.get_i32();
        let msg_type = data.get_u8();
        let code = data.get_i8();
        let status = TokenStatus::from_code(code).ok_or(DecodeError::UnknownStatus(code))?;
        let body = match MessageType::from_byte(msg_type) {
            Some(MessageType::Ping) => ResponseBody::Ping {
                connected: match data.len() {
                    0 => None,
                    1 => Some(i32::from(data.get_i8())),
                    _ => Some(need(&mut data, 4)?.get_i32()),
                },
            },
            Some(kind @ (MessageType::Flow | MessageType::ParamFlow)) => {
                let answer = if data.is_empty() {
                    TokenAnswer::NONE
                } else {
                    let fields = need(&mut data, 8)?;
                    TokenAnswer {
                        remaining: fields.get_i32(),
                        wait_ms: fields.get_i32(),
                    }
                };
                match kind {
                    MessageType::Flow => ResponseBody::Flow(answer),
                    _ => ResponseBody::ParamFlow(answer),
                }
            }
            None => ResponseBody::Unsupported { msg_type },
        };
        finished(data)?;
        Ok(Response { xid, status, body })
    }
}

/// Nothing may follow the last field.
fn finished(data: &[u8]) -> Result<(), DecodeError> {
    match data.len() {
        0 => Ok(()),
        n => Err(DecodeError::Trailing(n)),
    }
}
