//! Where a tenant's webhooks may call (`--tenant-webhook-allowed-cidrs`, default any address), and never the
//! kspaces server itself: a literal address outside is refused when the configuration is written, a name that
//! resolves outside fails the call under the webhook's `failurePolicy`. The system space's webhooks may call
//! anywhere.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};

use kspaces_storage::SpaceName;
use serde_json::Value;

use crate::kinds::workspace::BaseUrl;
use crate::status::Cause;

/// An address range (`10.0.0.0/8`, `fd00::/8`, or one address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n`, an IPv6 range, or a single address; why not, when it is none.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (address, prefix) = text.split_once('/').unwrap_or((text, ""));
        let network: IpAddr = address.trim().parse().map_err(|_| format!("invalid CIDR address: {text}"))?;
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix = if prefix.is_empty() { bits } else { prefix.parse::<u8>().ok().filter(|p| *p <= bits).ok_or_else(|| format!("invalid CIDR address: {text}"))? };
        Ok(Cidr { network, prefix })
    }

    /// Parses a comma-separated list (empty: none).
    pub fn parse_list(text: &str) -> Result<Vec<Cidr>, String> {
        text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Cidr::parse).collect()
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(address),
            v4 => v4,
        };
        match (self.network, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => masked(u128::from(u32::from(network)), u128::from(u32::from(address)), self.prefix, 32),
            (IpAddr::V6(network), IpAddr::V6(address)) => masked(u128::from(network), u128::from(address), self.prefix, 128),
            _ => false,
        }
    }
}

fn masked(network: u128, address: u128, prefix: u8, bits: u8) -> bool {
    let shift = u32::from(bits - prefix);
    shift >= u32::from(bits) || (network >> shift) == (address >> shift)
}

/// The allowed ranges (empty: any address) and where the server itself listens.
pub struct Reach {
    allowed: RwLock<Vec<Cidr>>,
    base_url: Arc<BaseUrl>,
}

impl Reach {
    pub fn new(base_url: Arc<BaseUrl>) -> Reach {
        Reach { allowed: RwLock::default(), base_url }
    }

    /// Sets `--tenant-webhook-allowed-cidrs`.
    pub fn allow(&self, cidrs: Vec<Cidr>) {
        *self.allowed.write().unwrap_or_else(|e| e.into_inner()) = cidrs;
    }

    /// Whether a webhook of `space` may be called at `address`.
    pub fn may_call(&self, space: &SpaceName, address: SocketAddr) -> bool {
        space.is_system() || (!self.is_server(address) && self.in_range(address.ip()))
    }

    fn in_range(&self, address: IpAddr) -> bool {
        let allowed = self.allowed.read().unwrap_or_else(|e| e.into_inner());
        allowed.is_empty() || allowed.iter().any(|c| c.contains(address))
    }

    /// Whether `address` is the server's own listener: its port on its address, on a loopback address, or on
    /// any address when it listens on all of them.
    fn is_server(&self, address: SocketAddr) -> bool {
        let Ok(url) = url::Url::parse(&self.base_url.get()) else { return false };
        let Some(port) = url.port_or_known_default() else { return false };
        let host: Option<IpAddr> = url.host_str().and_then(|h| h.trim_start_matches('[').trim_end_matches(']').parse().ok());
        address.port() == port && (address.ip().is_loopback() || address.ip().is_unspecified() || host.is_none_or(|h| h == address.ip() || h.is_unspecified()))
    }

    /// The causes for webhooks of a configuration in `space` whose URL is a literal address they may not call.
    pub fn check_configuration(&self, space: &SpaceName, object: &Value) -> Vec<Cause> {
        let webhooks = object.get("webhooks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let urls = webhooks.iter().enumerate().filter_map(|(i, webhook)| {
            webhook.pointer("/clientConfig/url").and_then(Value::as_str).and_then(|url| self.check_url(space, &format!("webhooks[{i}].clientConfig.url"), url))
        });
        urls.collect()
    }

    /// The cause when `text` (at `field`), a URL a tenant's space asks the server to call (a webhook's, an issuer's),
    /// is a literal address it may not call.
    pub fn check_url(&self, space: &SpaceName, field: &str, text: &str) -> Option<Cause> {
        if space.is_system() {
            return None;
        }
        let url = url::Url::parse(text).ok()?;
        let ip = url.host_str().and_then(|h| h.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok())?;
        let address = SocketAddr::new(ip, url.port_or_known_default().unwrap_or(443));
        if self.is_server(address) {
            Some(Cause::invalid(field, text, "a tenant's webhook or issuer may not call the kspaces server itself"))
        } else if !self.in_range(ip) {
            Some(Cause::invalid(field, text, "the address is outside the ranges tenants' webhooks and issuers may call (--tenant-webhook-allowed-cidrs)"))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_contain_their_addresses_only() {
        let cidr = |s: &str| Cidr::parse(s).unwrap_or_else(|e| panic!("{e}"));
        let ip = |s: &str| s.parse::<IpAddr>().unwrap_or_else(|e| panic!("{e}"));
        assert!(cidr("10.0.0.0/8").contains(ip("10.200.1.1")));
        assert!(!cidr("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(cidr("0.0.0.0/0").contains(ip("1.2.3.4")));
        assert!(cidr("127.0.0.1").contains(ip("127.0.0.1")));
        assert!(!cidr("127.0.0.1").contains(ip("127.0.0.2")));
        assert!(cidr("fd00::/8").contains(ip("fd12::1")));
        assert!(cidr("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("nonsense").is_err());
    }
}
