//! Whole-answer rewriting (small answers and documents read at once), and the splice of an
//! upgraded exec/attach stream whose error channel is rewritten down.

use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use paddock_core::{ResponseKind, TenantContext};

use paddock_upstream::error::ServerError;

/// Largest discovery or OpenAPI document paddock buffers to filter.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 128 << 20;

/// Largest upstream answer read whole before it is rewritten (see [`small_complete_body`]).
pub(crate) const SMALL_BODY_BYTES: usize = 64 * 1024;

/// The length of an upstream answer small enough to be read whole: announced by
/// Content-Length, at most [`SMALL_BODY_BYTES`], and not a watch (whose events must leave as
/// they come). Lists of any length stay streamed unless they are this small.
pub(crate) fn small_complete_body(plan: &paddock_core::Plan, h: &HeaderMap) -> Option<usize> {
    if matches!(
        plan.response,
        ResponseKind::Watch | ResponseKind::TableWatch
    ) || plan.long_running
    {
        return None;
    }
    h.get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse::<usize>()
        .ok()
        .filter(|&n| n <= SMALL_BODY_BYTES)
}

/// A whole upstream answer rewritten for the tenant.
pub fn rewrite_whole(
    ctx: &TenantContext,
    plan: &paddock_core::Plan,
    status: StatusCode,
    content_type: &str,
    raw: &[u8],
) -> Result<Vec<u8>, ServerError> {
    let mut doc = Vec::with_capacity(raw.len() + raw.len() / 8);
    paddock_core::rewrite_whole_into(ctx, plan, status.as_u16(), content_type, raw, &mut doc)?;
    Ok(doc)
}

/// The Content-Type of a response ("" when absent or not text).
pub fn content_type_of<B>(resp: &Response<B>) -> String {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

pub(crate) fn parts_content_type(h: &HeaderMap) -> Option<HeaderValue> {
    h.get(header::CONTENT_TYPE).cloned()
}

/// Splices an upgraded exec/attach WebSocket: client to upstream as it is, upstream to client
/// through [`paddock_core::response::wsframe::ErrorChannelRewriter`] (error channel names rewritten down).
pub(crate) async fn splice_rewriting_errors<C, U>(
    client: C,
    upstream: U,
    ctx: TenantContext,
) -> std::io::Result<()>
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    U: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut cr, mut cw) = tokio::io::split(client);
    let (mut ur, mut uw) = tokio::io::split(upstream);
    let up = async {
        tokio::io::copy(&mut cr, &mut uw).await?;
        uw.shutdown().await
    };
    let down = async {
        let mut rw = paddock_core::response::wsframe::ErrorChannelRewriter::new(|p: &[u8]| {
            paddock_core::response::wsframe::error_payload_down(&ctx, p)
        });
        let mut buf = vec![0u8; 32 * 1024];
        let mut out = Vec::with_capacity(32 * 1024);
        loop {
            out.clear();
            let n = ur.read(&mut buf).await?;
            if n == 0 {
                rw.finish(&mut out);
                cw.write_all(&out).await?;
                return cw.shutdown().await;
            }
            rw.feed(&buf[..n], &mut out);
            if !out.is_empty() {
                cw.write_all(&out).await?;
                cw.flush().await?;
            }
        }
    };
    tokio::try_join!(up, down).map(|_| ())
}
