//! Who holds a listening TCP port on this machine, from `/proc/net/tcp`:
//! named when a server that is not the user's sidecar answers there, and
//! when `serve` cannot take its port.

use std::net::IpAddr;

/// Who holds the listening socket of a loopback `url`'s address, from
/// `/proc/net/tcp`: "port 8377 is held by user bob (uid 1001), another
/// user" (the plugin says the same). A `localhost` URL names any loopback
/// address.
pub fn listener_of(url: &str) -> Option<String> {
    let uri = reqwest::Url::parse(url).ok()?;
    let host = uri.host_str()?;
    let loopback = evolve_hud_api::loopback_host(host);
    let port = uri.port()?;
    if !loopback {
        return None;
    }
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let uid = listening_uid(ip, port)?;
    let who = if uid == crate::private::me() {
        "a process of yours".to_owned()
    } else {
        let name = user_name(uid).map_or_else(|| "uid".to_owned(), |name| format!("user {name}"));
        format!("{name} (uid {uid}), another user")
    };
    Some(format!("port {port} is held by {who}"))
}

/// The user id owning the socket listening on TCP `port` at `ip` (or at
/// every address), any address when `ip` is `None`.
fn listening_uid(ip: Option<IpAddr>, port: u16) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        text.lines().skip(1).find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st … uid: LISTEN is state 0A.
            let (address, at) = fields.get(1)?.split_once(':')?;
            let listening = fields.get(3) == Some(&"0A") && u16::from_str_radix(at, 16).ok()? == port;
            let here = match (ip, proc_address(address)) {
                (None, _) => true,
                (Some(ip), Some(local)) => local == ip || local.is_unspecified(),
                (Some(_), None) => false,
            };
            (listening && here).then(|| fields.get(7)?.parse().ok())?
        })
    })
}

/// An address as `/proc/net/tcp{,6}` writes it: each 32-bit word in hex,
/// in the machine's byte order.
fn proc_address(hex: &str) -> Option<IpAddr> {
    let words: Option<Vec<[u8; 4]>> = (0..hex.len() / 8)
        .map(|i| Some(u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?.to_ne_bytes()))
        .collect();
    let bytes: Vec<u8> = words?.concat();
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?).to_canonical()),
        _ => None,
    }
}

fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut parts = line.split(':');
        let name = parts.next()?;
        (parts.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn proc_addresses_read_as_the_kernel_writes_them() {
        if cfg!(target_endian = "little") {
            assert_eq!(super::proc_address("0100007F"), Some("127.0.0.1".parse().unwrap()));
            assert_eq!(
                super::proc_address("00000000000000000000000001000000"),
                Some("::1".parse().unwrap())
            );
            assert_eq!(
                super::proc_address("0000000000000000FFFF00000100007F"),
                Some("127.0.0.1".parse().unwrap())
            );
        }
        assert_eq!(super::proc_address("zz"), None);
    }
}
