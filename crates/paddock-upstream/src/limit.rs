//! Bounded reading of a body: what is larger than its limit is refused with 413.

use bytes::Bytes;
use http_body_util::BodyExt;

use crate::body::drain;
use crate::error::ServerError;

/// Reads a request body up to `limit` bytes. A longer body is refused with 413 after the rest
/// is drained (bounded), so the client sees the Status rather than a reset stream.
pub async fn collect_limited<B>(mut body: B, limit: usize) -> Result<Bytes, ServerError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ServerError::BadRequest(format!("could not read the request body: {e}"))
        })?;
        if let Some(d) = frame.data_ref() {
            if buf.len() + d.len() > limit {
                drain(body).await;
                return Err(ServerError::TooLarge(format!(
                    "request body is larger than the limit of {limit} bytes"
                )));
            }
            buf.extend_from_slice(d);
        }
    }
    Ok(buf.freeze())
}
