//! GET of one object (and of its `status`).

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use actix_web::HttpResponse;
use bytes::Bytes;

use super::{list, Ctx};
use crate::negotiate::Output;
use crate::registry::stored;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    // A valid `resourceVersion` is answered with the current object; one that does not parse is refused, as
    // kube's storage refuses it.
    if let Some(resource_version) = ctx.param("resourceVersion") {
        list::parse_position(resource_version)?;
    }
    // JSON of a kind nothing transforms: the stored bytes, with the version written in. The answer shares the
    // store's buffer rather than copying it, so answers waiting on a slow reader's flow control cost no copies.
    if ctx.output(true)? == Output::JSON {
        if let Some(record) = ctx.server.registry.get_as_stored(&ctx.resource, &ctx.scope, &ctx.info.name).await? {
            return Ok(HttpResponse::Ok().content_type("application/json").body(Pieces(stored::as_read(&record)?)));
        }
    }
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    ctx.respond_object(200, &object)
}

/// A body of two pieces of known length, sent one after the other.
struct Pieces([Bytes; 2]);

impl MessageBody for Pieces {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.0.iter().map(|piece| piece.len() as u64).sum())
    }

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let pieces = &mut self.get_mut().0;
        Poll::Ready(pieces.iter_mut().find(|piece| !piece.is_empty()).map(|piece| Ok(std::mem::take(piece))))
    }
}
