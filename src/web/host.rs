//! The `Host` check against DNS rebinding: a page on another site can make a browser send
//! requests to 127.0.0.1 under a name of its own (`evil.example` resolving to 127.0.0.1), and
//! then read the answers as its own origin. The review page answers only requests addressed to
//! it by an IP literal or `localhost`, on the port it serves: names an attacker controls never
//! match.

use std::net::{IpAddr, SocketAddr};

/// Whether a request's `Host` header names the address the page serves on.
pub fn allowed(host: &str, served: SocketAddr) -> bool {
    let Some((name, port)) = host.rsplit_once(':') else {
        return false;
    };
    if port.parse::<u16>().ok() != Some(served.port()) {
        return false;
    }
    let name = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    let ip = served.ip();
    if name.eq_ignore_ascii_case("localhost") {
        return ip.is_loopback() || ip.is_unspecified();
    }
    match name.parse::<IpAddr>() {
        Ok(named) => ip.is_unspecified() || named == ip,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_served_address_by_ip_or_localhost() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(allowed("127.0.0.1:8080", lo));
        assert!(allowed("localhost:8080", lo));
        assert!(!allowed("evil.example:8080", lo));
        assert!(!allowed("127.0.0.1:9090", lo));
        assert!(!allowed("127.0.0.2:8080", lo));
        assert!(!allowed("127.0.0.1", lo));
        let v6: SocketAddr = "[::1]:80".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(allowed("[::1]:80", v6));
        let any: SocketAddr = "0.0.0.0:80".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(allowed("10.0.0.5:80", any));
        assert!(!allowed("rebind.example:80", any));
    }
}
