//! Frames on a byte stream: each message behind its 2-byte big-endian length, for
//! `tokio_util::codec::Framed` on either side of a connection.

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::error::{MalformedRequest, ProtocolError};
use super::message::{MAX_FRAME_LEN, Request, Response};

/// A token server's side: reads requests, writes responses.
#[derive(Debug, Default)]
pub struct ServerCodec;

/// A token client's side: writes requests, reads responses.
#[derive(Debug, Default)]
pub struct ClientCodec;

/// The next frame's content, once it is all there. A length past [`MAX_FRAME_LEN`] is refused as
/// soon as it is read, before its bytes arrive. The length stays in `src` until the whole frame is
/// there, so every call starts at a frame's beginning.
fn next_frame(src: &mut BytesMut) -> Result<Option<BytesMut>, ProtocolError> {
    if src.len() < 2 {
        return Ok(None);
    }
    let len = usize::from(u16::from_be_bytes([src[0], src[1]]));
    if len > MAX_FRAME_LEN {
        return Err(ProtocolError::FrameTooLong { len });
    }
    if src.len() < 2 + len {
        src.reserve(2 + len - src.len());
        return Ok(None);
    }
    src.advance(2);
    Ok(Some(src.split_to(len)))
}

/// Writes `len` and the content `write` puts.
fn put_frame(
    len: usize,
    dst: &mut BytesMut,
    write: impl FnOnce(&mut BytesMut),
) -> Result<(), ProtocolError> {
    if len > MAX_FRAME_LEN {
        return Err(ProtocolError::FrameTooLong { len });
    }
    dst.reserve(2 + len);
    dst.put_u16(len as u16);
    let start = dst.len();
    write(dst);
    debug_assert_eq!(dst.len() - start, len, "wire_len agrees with write");
    Ok(())
}

impl Decoder for ServerCodec {
    /// A request, or a frame whose content is not one (answer it and go on).
    type Item = Result<Request, MalformedRequest>;
    type Error = ProtocolError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, ProtocolError> {
        Ok(next_frame(src)?.map(|frame| Request::read(&frame)))
    }
}

impl Encoder<Response> for ServerCodec {
    type Error = ProtocolError;

    fn encode(&mut self, response: Response, dst: &mut BytesMut) -> Result<(), ProtocolError> {
        put_frame(response.wire_len(), dst, |out| response.write(out))
    }
}

impl Decoder for ClientCodec {
    type Item = Response;
    type Error = ProtocolError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Response>, ProtocolError> {
        match next_frame(src)? {
            Some(frame) => Response::read(&frame)
                .map(Some)
                .map_err(ProtocolError::MalformedResponse),
            None => Ok(None),
        }
    }
}

impl Encoder<Request> for ClientCodec {
    type Error = ProtocolError;

    /// Refuses a request that does not fit in a frame (see [`RequestBody::param_flow`] to fit
    /// parameters in one) and writes nothing of it.
    ///
    /// [`RequestBody::param_flow`]: super::RequestBody::param_flow
    fn encode(&mut self, request: Request, dst: &mut BytesMut) -> Result<(), ProtocolError> {
        put_frame(request.wire_len(), dst, |out| request.write(out))
    }
}
