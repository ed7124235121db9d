//! Listening TCP sockets, from Linux's /proc: which socket inodes listen on which address
//! and port (`/proc/thread-self/net/tcp` and `tcp6`: the calling thread's network
//! namespace), and which socket inodes a process holds open (its `/proc/PID/fd` links
//! `socket:[INODE]`). The lab uses them to find the server behind a URL's port. Reads
//! only; a table or a process it may not read yields nothing (None), never an error.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One listening socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub addr: IpAddr,
    pub port: u16,
    pub inode: u64,
}

impl Listener {
    /// Does a connection to `ip`:`port` reach this socket? Its address is that one, or a
    /// wildcard (`0.0.0.0`, `::`) of the same family or of IPv6 (a `::` socket takes IPv4
    /// too unless it is v6-only, which /proc does not say).
    pub fn serves(&self, ip: Option<IpAddr>, port: u16) -> bool {
        if self.port != port {
            return false;
        }
        match ip {
            None => true,
            Some(ip) => {
                self.addr == ip
                    || (self.addr.is_unspecified()
                        && (self.addr.is_ipv4() == ip.is_ipv4() || self.addr.is_ipv6()))
            }
        }
    }
}

/// Every listening TCP socket of the calling thread's network namespace (IPv4 and IPv6).
pub fn listeners() -> Vec<Listener> {
    ["tcp", "tcp6"]
        .iter()
        .flat_map(|table| {
            let text = std::fs::read_to_string(format!("/proc/thread-self/net/{table}"))
                .or_else(|_| std::fs::read_to_string(format!("/proc/net/{table}")))
                .unwrap_or_default();
            parse_tcp_table(&text)
        })
        .collect()
}

/// The listening sockets (state `0A`) of a `/proc/net/tcp` or `tcp6` table.
pub fn parse_tcp_table(text: &str) -> Vec<Listener> {
    text.lines()
        .skip(1)
        .filter_map(|row| {
            let cols: Vec<&str> = row.split_whitespace().collect();
            if cols.get(3) != Some(&"0A") {
                return None;
            }
            let (addr, port) = cols.get(1)?.split_once(':')?;
            Some(Listener {
                addr: parse_addr(addr)?,
                port: u16::from_str_radix(port, 16).ok()?,
                inode: cols.get(9)?.parse().ok()?,
            })
        })
        .collect()
}

/// An address as the kernel prints it: each 32-bit word of the network-order address in
/// hex, read as a number of this machine's byte order ("0100007F" is 127.0.0.1 on x86).
fn parse_addr(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            let v6 = Ipv6Addr::from(bytes);
            // An IPv4 client on a `::` socket shows as ::ffff:a.b.c.d.
            Some(match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(v6),
            })
        }
        _ => None,
    }
}

/// The socket inodes `pid` holds open; None when its descriptors cannot be read (gone, or
/// another user's without the privilege to look).
pub fn socket_inodes(pid: i32) -> Option<HashSet<u64>> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        fds.flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter_map(|link| {
                let link = link.to_string_lossy().into_owned();
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .parse()
                    .ok()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_rows_are_read_and_others_skipped() {
        // Written as an x86 (little-endian) kernel prints them.
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                  0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41234 1 0 100 0 0 10 0\n\
                  1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41235 1 0 100 0 0 10 0\n\
                  2: 0100007F:1F90 0100007F:A2C4 01 00000000:00000000 00:00000000 00000000     0        0 41299 1 0 20 4 30 10 -1\n";
        let found = parse_tcp_table(v4);
        if cfg!(target_endian = "little") {
            assert_eq!(
                found,
                vec![
                    Listener {
                        addr: "127.0.0.1".parse().unwrap(),
                        port: 8080,
                        inode: 41234
                    },
                    Listener {
                        addr: "0.0.0.0".parse().unwrap(),
                        port: 80,
                        inode: 41235
                    },
                ]
            );
        }
        assert_eq!(found.len(), 2, "the established row is no listener");
        let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                  0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51234 1 0 100 0 0 10 0\n";
        let found = parse_tcp_table(v6);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].addr, "::".parse::<IpAddr>().unwrap());
        assert!(parse_tcp_table("header only\n").is_empty());
    }

    #[test]
    fn a_listener_serves_its_address_its_wildcard_and_its_port_only() {
        let at = |addr: &str| Listener {
            addr: addr.parse().unwrap(),
            port: 8080,
            inode: 1,
        };
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert!(at("127.0.0.1").serves(ip("127.0.0.1"), 8080));
        assert!(!at("127.0.0.2").serves(ip("127.0.0.1"), 8080));
        assert!(!at("127.0.0.1").serves(ip("127.0.0.1"), 8081));
        assert!(at("0.0.0.0").serves(ip("127.0.0.1"), 8080));
        assert!(at("::").serves(ip("127.0.0.1"), 8080));
        assert!(!at("0.0.0.0").serves(ip("::1"), 8080));
        assert!(at("127.0.0.2").serves(None, 8080));
    }

    #[test]
    fn this_process_sees_its_own_listening_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mine = listeners()
            .into_iter()
            .find(|l| l.port == port)
            .expect("listed");
        let held = socket_inodes(std::process::id() as i32).expect("own fds readable");
        assert!(held.contains(&mine.inode));
    }
}
