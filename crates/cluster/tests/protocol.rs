//! Sentinel's token protocol: the bytes a Java client and server exchange, every message type both
//! ways, and what happens to malformed and oversized frames.

use bytes::{BufMut, BytesMut};
use floodgate_cluster::protocol::{
    ClientCodec, DecodeError, MAX_FRAME_LEN, MalformedRequest, MessageType, Param, ProtocolError,
    Request, RequestBody, Response, ResponseBody, ServerCodec, TokenAnswer, TokenStatus,
};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

fn encode_request(request: Request) -> Vec<u8> {
    let mut out = BytesMut::new();
    ClientCodec.encode(request, &mut out).unwrap();
    out.to_vec()
}

fn encode_response(response: Response) -> Vec<u8> {
    let mut out = BytesMut::new();
    ServerCodec.encode(response, &mut out).unwrap();
    out.to_vec()
}

/// What a server reads from `bytes`, one item per frame.
fn server_reads(bytes: &[u8]) -> Vec<Result<Request, MalformedRequest>> {
    let mut codec = ServerCodec;
    let mut src = BytesMut::from(bytes);
    let mut out = Vec::new();
    while let Some(item) = codec.decode(&mut src).unwrap() {
        out.push(item);
    }
    assert!(src.is_empty(), "every byte read");
    out
}

fn client_reads(bytes: &[u8]) -> Result<Response, ProtocolError> {
    let mut src = BytesMut::from(bytes);
    Ok(ClientCodec.decode(&mut src)?.expect("a whole frame"))
}

/// A frame of `content` behind its length.
fn frame(content: &[u8]) -> Vec<u8> {
    let mut out = (content.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(content);
    out
}

#[test]
fn a_flow_request_is_javas_bytes() {
    let bytes = encode_request(Request {
        xid: 7,
        body: RequestBody::Flow {
            flow_id: 123,
            count: 1,
            prioritized: true,
        },
    });
    assert_eq!(
        bytes,
        [
            0, 18, // length
            0, 0, 0, 7, // xid
            1, // FLOW
            0, 0, 0, 0, 0, 0, 0, 123, // flowId
            0, 0, 0, 1, // count
            1, // priority
        ]
    );
}

#[test]
fn a_ping_is_javas_bytes() {
    let bytes = encode_request(Request {
        xid: 0,
        body: RequestBody::Ping {
            namespace: "appA".into(),
        },
    });
    assert_eq!(
        bytes,
        [0, 13, 0, 0, 0, 0, 0, 0, 0, 0, 4, b'a', b'p', b'p', b'A']
    );
}

#[test]
fn every_parameter_type_is_tagged_as_java_tags_it() {
    let (body, dropped) = RequestBody::param_flow(
        9,
        2,
        [
            Param::Int(-1),
            Param::Long(2),
            Param::Byte(3),
            Param::Double(0.5),
            Param::Float(1.5),
            Param::Short(-2),
            Param::Bool(true),
            Param::Str("é".into()),
        ],
    );
    assert_eq!(dropped, 0);
    let bytes = encode_request(Request { xid: 1, body });
    let mut expected = vec![0, 0, 0, 1, 2];
    expected.extend_from_slice(&9i64.to_be_bytes());
    expected.extend_from_slice(&2i32.to_be_bytes());
    expected.extend_from_slice(&8i32.to_be_bytes());
    expected.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff]);
    expected.push(1);
    expected.extend_from_slice(&2i64.to_be_bytes());
    expected.extend_from_slice(&[2, 3]);
    expected.push(3);
    expected.extend_from_slice(&0.5f64.to_be_bytes());
    expected.push(4);
    expected.extend_from_slice(&1.5f32.to_be_bytes());
    expected.extend_from_slice(&[5, 0xff, 0xfe]);
    expected.extend_from_slice(&[6, 1]);
    expected.extend_from_slice(&[7, 0, 0, 0, 2, 0xc3, 0xa9]);
    assert_eq!(bytes, frame(&expected));
}

#[test]
fn token_answers_are_javas_bytes() {
    let bytes = encode_response(Response {
        xid: 7,
        status: TokenStatus::ShouldWait,
        body: ResponseBody::Flow(TokenAnswer {
            remaining: -3,
            wait_ms: 40,
        }),
    });
    assert_eq!(
        bytes,
        [0, 14, 0, 0, 0, 7, 1, 2, 0xff, 0xff, 0xff, 0xfd, 0, 0, 0, 40]
    );
    let ping = encode_response(Response {
        xid: 0,
        status: TokenStatus::Ok,
        body: ResponseBody::Ping { connected: Some(3) },
    });
    assert_eq!(ping, [0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
}

#[test]
fn every_status_reads_back_from_a_java_answer() {
    for status in TokenStatus::ALL {
        let bytes = frame(&[0, 0, 0, 5, 2, status.code() as u8, 0, 0, 0, 1, 0, 0, 0, 0]);
        let response = client_reads(&bytes).unwrap();
        assert_eq!(response.status, status);
        assert_eq!(
            response.body,
            ResponseBody::ParamFlow(TokenAnswer {
                remaining: 1,
                wait_ms: 0
            })
        );
    }
    assert!(matches!(
        client_reads(&frame(&[0, 0, 0, 5, 1, 0xfd])),
        Err(ProtocolError::MalformedResponse(
            DecodeError::UnknownStatus(-3)
        ))
    ));
}

#[test]
fn old_and_bad_answers_read_as_java_reads_them() {
    // Servers before Sentinel 1.7 answer a ping with one byte.
    let old = client_reads(&frame(&[0, 0, 0, 0, 0, 0, 2])).unwrap();
    assert_eq!(old.body, ResponseBody::Ping { connected: Some(2) });
    // A bad ping answer is the head alone.
    let bad = client_reads(&frame(&[0, 0, 0, 0, 0, 0xff])).unwrap();
    assert_eq!(
        (bad.status, bad.body),
        (TokenStatus::Fail, ResponseBody::Ping { connected: None })
    );
    // A token answer without data: nothing left, no wait.
    let empty = client_reads(&frame(&[0, 0, 0, 4, 1, 0xfc])).unwrap();
    assert_eq!(
        (empty.status, empty.body),
        (
            TokenStatus::BadRequest,
            ResponseBody::Flow(TokenAnswer::NONE)
        )
    );
    // An unknown type's answer is its head.
    let unknown = client_reads(&frame(&[0, 0, 0, 4, 3, 0xff])).unwrap();
    assert_eq!(unknown.body, ResponseBody::Unsupported { msg_type: 3 });
}

#[test]
fn a_flow_request_without_its_priority_byte_is_not_prioritized() {
    let mut content = vec![0, 0, 0, 2, 1];
    content.extend_from_slice(&5i64.to_be_bytes());
    content.extend_from_slice(&1i32.to_be_bytes());
    let read = server_reads(&frame(&content));
    assert_eq!(
        read,
        [Ok(Request {
            xid: 2,
            body: RequestBody::Flow {
                flow_id: 5,
                count: 1,
                prioritized: false
            }
        })]
    );
}

/// Each malformed request, what is wrong with it, and what the server answers.
#[test]
fn malformed_requests_are_named_and_answered_and_the_stream_goes_on() {
    let flow_head = |xid: u8| vec![0, 0, 0, xid, 1];
    let mut cases: Vec<(Vec<u8>, DecodeError)> = Vec::new();
    cases.push((vec![0, 0, 1], DecodeError::Truncated));
    let mut short_flow = flow_head(1);
    short_flow.extend_from_slice(&[0; 11]);
    cases.push((short_flow, DecodeError::Truncated));
    let mut long_flow = flow_head(2);
    long_flow.extend_from_slice(&[0; 14]);
    cases.push((long_flow, DecodeError::Trailing(1)));
    let mut bad_priority = flow_head(3);
    bad_priority.extend_from_slice(&[0; 12]);
    bad_priority.push(2);
    cases.push((bad_priority, DecodeError::BadBool(2)));
    cases.push((vec![0, 0, 0, 4, 0], DecodeError::NoNamespace));
    cases.push((vec![0, 0, 0, 5, 0, 0, 0, 0, 0], DecodeError::NoNamespace));
    cases.push((
        vec![0, 0, 0, 6, 0, 0xff, 0xff, 0xff, 0xff],
        DecodeError::BadLength(-1),
    ));
    cases.push((
        vec![0, 0, 0, 7, 0, 0, 0, 0, 5, b'a'],
        DecodeError::Truncated,
    ));
    cases.push((vec![0, 0, 0, 8, 0, 0, 0, 0, 1, 0xff], DecodeError::NotUtf8));
    cases.push((vec![0, 0, 0, 9, 3, 1, 2, 3], DecodeError::UnknownType(3)));
    let param_head = |xid: u8, n: i32| {
        let mut c = vec![0, 0, 0, xid, 2];
        c.extend_from_slice(&1i64.to_be_bytes());
        c.extend_from_slice(&1i32.to_be_bytes());
        c.extend_from_slice(&n.to_be_bytes());
        c
    };
    cases.push((param_head(10, 0), DecodeError::BadParamCount(0)));
    cases.push((param_head(11, i32::MAX), DecodeError::Truncated));
    let mut bad_tag = param_head(12, 1);
    bad_tag.extend_from_slice(&[8, 0]);
    cases.push((bad_tag, DecodeError::UnknownParamTag(8)));

    let mut stream = Vec::new();
    for (content, _) in &cases {
        stream.extend(frame(content));
    }
    // A good request after them all is read: a malformed frame does not end the connection.
    stream.extend(encode_request(Request {
        xid: 99,
        body: RequestBody::Flow {
            flow_id: 1,
            count: 1,
            prioritized: false,
        },
    }));
    let read = server_reads(&stream);
    assert_eq!(read.len(), cases.len() + 1);
    for ((content, error), item) in cases.iter().zip(&read) {
        let malformed = item.as_ref().expect_err("malformed");
        assert_eq!(&malformed.error, error, "{content:?}");
    }
    assert_eq!(read.last().unwrap().as_ref().unwrap().xid, 99);

    // The answers: none without a head, BAD_REQUEST to token requests, −1 to pings and unknown types.
    let answer = |i: usize| read[i].as_ref().unwrap_err().answer();
    assert_eq!(answer(0), None);
    assert_eq!(
        answer(1),
        Some(Response {
            xid: 1,
            status: TokenStatus::BadRequest,
            body: ResponseBody::Flow(TokenAnswer::NONE)
        })
    );
    assert_eq!(
        answer(4),
        Some(Response {
            xid: 4,
            status: TokenStatus::Fail,
            body: ResponseBody::Ping { connected: None }
        })
    );
    assert_eq!(
        answer(9),
        Some(Response {
            xid: 9,
            status: TokenStatus::Fail,
            body: ResponseBody::Unsupported { msg_type: 3 }
        })
    );
    assert_eq!(
        encode_response(answer(9).unwrap()),
        [0, 6, 0, 0, 0, 9, 3, 0xff],
        "the head alone, as Java's server answers"
    );
    assert_eq!(
        answer(12).unwrap().body,
        ResponseBody::ParamFlow(TokenAnswer::NONE)
    );
}

#[test]
fn an_oversized_frame_is_refused_as_soon_as_its_length_is_read() {
    let len = (MAX_FRAME_LEN + 1) as u16;
    let mut src = BytesMut::from(&len.to_be_bytes()[..]);
    let error = ServerCodec.decode(&mut src).unwrap_err();
    assert!(
        matches!(error, ProtocolError::FrameTooLong { len } if len == MAX_FRAME_LEN + 1),
        "{error}"
    );
    let mut src = BytesMut::from(&u16::MAX.to_be_bytes()[..]);
    assert!(ClientCodec.decode(&mut src).is_err());
    // The largest frame is read.
    let mut content = vec![0, 0, 0, 1, 0];
    content.extend_from_slice(&((MAX_FRAME_LEN - 9) as i32).to_be_bytes());
    content.resize(MAX_FRAME_LEN, b'n');
    let read = server_reads(&frame(&content));
    assert!(
        matches!(&read[0], Ok(Request { body: RequestBody::Ping { namespace }, .. }) if namespace.len() == MAX_FRAME_LEN - 9)
    );
}

#[test]
fn a_request_too_long_for_a_frame_is_not_sent_and_parameters_are_fitted() {
    let mut out = BytesMut::new();
    out.put_u8(0xaa);
    let too_long = Request {
        xid: 1,
        body: RequestBody::Ping {
            namespace: "n".repeat(MAX_FRAME_LEN),
        },
    };
    let error = ClientCodec.encode(too_long, &mut out).unwrap_err();
    assert!(matches!(error, ProtocolError::FrameTooLong { len } if len == MAX_FRAME_LEN + 9));
    assert_eq!(&out[..], [0xaa], "nothing of it written");

    // 100 strings of 15 bytes (20 on the wire each) fit 50 to a frame; the rest are dropped.
    let params = (0..100).map(|i| Param::Str(format!("value-{i:09}")));
    let (body, dropped) = RequestBody::param_flow(1, 1, params);
    let RequestBody::ParamFlow { params, .. } = &body else {
        unreachable!()
    };
    assert_eq!((params.len(), dropped), (50, 50));
    assert_eq!(params[49], Param::Str("value-000000049".into()), "in order");
    let bytes = encode_request(Request { xid: 1, body });
    assert!(bytes.len() - 2 <= MAX_FRAME_LEN);
}

#[test]
fn message_types_are_sentinels() {
    let bytes: Vec<u8> = [MessageType::Ping, MessageType::Flow, MessageType::ParamFlow]
        .iter()
        .map(|t| t.byte())
        .collect();
    assert_eq!(bytes, [0, 1, 2]);
    assert_eq!(
        MessageType::from_byte(3),
        None,
        "cluster concurrency: not served"
    );
}

fn param() -> impl Strategy<Value = Param> {
    prop_oneof![
        any::<i32>().prop_map(Param::Int),
        any::<i64>().prop_map(Param::Long),
        any::<i8>().prop_map(Param::Byte),
        any::<f64>()
            .prop_filter("NaN is not equal to itself", |v| !v.is_nan())
            .prop_map(Param::Double),
        any::<f32>()
            .prop_filter("NaN is not equal to itself", |v| !v.is_nan())
            .prop_map(Param::Float),
        any::<i16>().prop_map(Param::Short),
        any::<bool>().prop_map(Param::Bool),
        ".{0,40}".prop_map(Param::Str),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let body = prop_oneof![
        ".{1,60}".prop_map(|namespace| RequestBody::Ping { namespace }),
        (any::<i64>(), any::<i32>(), any::<bool>()).prop_map(|(flow_id, count, prioritized)| {
            RequestBody::Flow {
                flow_id,
                count,
                prioritized,
            }
        }),
        (
            any::<i64>(),
            any::<i32>(),
            prop::collection::vec(param(), 1..40)
        )
            .prop_map(|(flow_id, count, params)| RequestBody::param_flow(flow_id, count, params).0),
    ];
    (any::<i32>(), body).prop_map(|(xid, body)| Request { xid, body })
}

fn response() -> impl Strategy<Value = Response> {
    let answer = (any::<i32>(), any::<i32>())
        .prop_map(|(remaining, wait_ms)| TokenAnswer { remaining, wait_ms });
    let body = prop_oneof![
        proptest::option::of(any::<i32>()).prop_map(|connected| ResponseBody::Ping { connected }),
        answer.clone().prop_map(ResponseBody::Flow),
        answer.prop_map(ResponseBody::ParamFlow),
        (3u8..=255).prop_map(|msg_type| ResponseBody::Unsupported { msg_type }),
    ];
    (
        any::<i32>(),
        prop::sample::select(TokenStatus::ALL.to_vec()),
        body,
    )
        .prop_map(|(xid, status, body)| Response { xid, status, body })
}

proptest! {
    /// Requests written by the client codec are read back by the server codec, whatever the reads
    /// the bytes arrive in.
    #[test]
    fn requests_round_trip(requests in prop::collection::vec(request(), 1..6), split in any::<prop::sample::Index>()) {
        let mut bytes = Vec::new();
        for r in &requests {
            bytes.extend(encode_request(r.clone()));
        }
        let at = split.index(bytes.len() + 1);
        let mut codec = ServerCodec;
        let mut src = BytesMut::from(&bytes[..at]);
        let mut read = Vec::new();
        while let Some(item) = codec.decode(&mut src).unwrap() {
            read.push(item.unwrap());
        }
        src.extend_from_slice(&bytes[at..]);
        while let Some(item) = codec.decode(&mut src).unwrap() {
            read.push(item.unwrap());
        }
        prop_assert_eq!(read, requests);
    }

    #[test]
    fn responses_round_trip(response in response()) {
        let bytes = encode_response(response.clone());
        prop_assert_eq!(client_reads(&bytes).unwrap(), response);
    }

    /// No frame content makes the server codec fail or panic: it is a request or a named malformation.
    #[test]
    fn any_frame_content_is_read_or_named(content in prop::collection::vec(any::<u8>(), 0..200)) {
        let read = server_reads(&frame(&content));
        prop_assert_eq!(read.len(), 1);
    }
}

#[test]
fn a_frame_arriving_a_byte_at_a_time_is_read_whole() {
    let bytes = encode_request(Request {
        xid: 3,
        body: RequestBody::Ping {
            namespace: "orders".into(),
        },
    });
    let mut codec = ServerCodec;
    let mut src = BytesMut::new();
    let mut read = Vec::new();
    for byte in bytes.iter().chain(bytes.iter()) {
        src.put_u8(*byte);
        if let Some(item) = codec.decode(&mut src).unwrap() {
            read.push(item.unwrap().xid);
        }
    }
    assert_eq!(read, [3, 3]);
}

/// Over a real socket: a client's ping, a malformed frame and a flow request, answered in order on one
/// connection.
#[tokio::test]
async fn a_connection_carries_requests_and_answers_both_ways() {
    use futures_util::{SinkExt, StreamExt};
    use tokio::io::AsyncWriteExt;
    use tokio_util::codec::{Framed, FramedRead};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(stream, ServerCodec);
        while let Some(item) = framed.next().await {
            let answer = match item.unwrap() {
                Ok(Request {
                    xid,
                    body: RequestBody::Ping { namespace },
                }) => {
                    assert_eq!(namespace, "appA");
                    Some(Response {
                        xid,
                        status: TokenStatus::Ok,
                        body: ResponseBody::Ping { connected: Some(1) },
                    })
                }
                Ok(Request { xid, .. }) => Some(Response {
                    xid,
                    status: TokenStatus::Ok,
                    body: ResponseBody::Flow(TokenAnswer {
                        remaining: 9,
                        wait_ms: 0,
                    }),
                }),
                Err(malformed) => malformed.answer(),
            };
            if let Some(answer) = answer {
                framed.send(answer).await.unwrap();
            }
        }
    });

    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut bytes = encode_request(Request {
        xid: 0,
        body: RequestBody::Ping {
            namespace: "appA".into(),
        },
    });
    bytes.extend(frame(&[0, 0, 0, 1, 1, 0, 0])); // a flow request cut short
    bytes.extend(encode_request(Request {
        xid: 2,
        body: RequestBody::Flow {
            flow_id: 11,
            count: 1,
            prioritized: false,
        },
    }));
    stream.write_all(&bytes).await.unwrap();
    let (read_half, mut write_half) = stream.into_split();
    let mut responses = FramedRead::new(read_half, ClientCodec);
    let mut answers = Vec::new();
    for _ in 0..3 {
        let r = responses.next().await.unwrap().unwrap();
        answers.push((r.xid, r.status));
    }
    assert_eq!(
        answers,
        [
            (0, TokenStatus::Ok),
            (1, TokenStatus::BadRequest),
            (2, TokenStatus::Ok)
        ]
    );
    write_half.shutdown().await.unwrap();
    drop(write_half);
    server.await.unwrap();
}
