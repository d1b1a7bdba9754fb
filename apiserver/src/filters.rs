//! Request filters, in the order the handler chain runs them: authenticate, parse the request, resolve the
//! space, authorize.

pub mod authenticate;
pub mod impersonate;
pub mod oidc;
pub mod request_header;
pub mod token_issuer;
pub mod token_webhook;
