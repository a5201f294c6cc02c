//! The client's connections to the sidecar, one at a time, each proven
//! before it carries the token.
//!
//! A connection is dialled to an IP address: a `localhost` URL dials
//! `127.0.0.1`, the address the sidecar serves, so a name that also
//! resolves to `::1` cannot lead to a server there. Before anything but
//! `/health` and the identity question goes over a connection, the server
//! at its other end answers a fresh nonce with the proof for the address
//! this very connection reached ([`super::Challenge`]). A connection that
//! closes is replaced by a new one, proven anew: a server that takes the
//! port during a restart gets neither the token nor a session's text, and a
//! relay on another address or port gets a proof for the wrong address.

use super::Trouble;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Where the sidecar's URL points, resolved for each new connection.
pub(super) struct Dialer {
    url: String,
    host: String,
    port: u16,
    /// The `Host` header: the URL's own host and port.
    authority: String,
    connect_timeout: Duration,
}

/// One open connection, and whether its server has proven it knows the
/// secret for the address it reached.
pub(super) struct Conn {
    sender: SendRequest<Full<Bytes>>,
    pub peer: SocketAddr,
    pub proven: bool,
}

/// A request to send: method, path, the token when it carries one, a JSON
/// body.
pub(super) struct Outgoing<'a> {
    pub method: hyper::Method,
    pub path: &'a str,
    pub bearer: Option<&'a str>,
    pub json: Option<Vec<u8>>,
}

impl Dialer {
    pub fn new(url: &str, connect_timeout: Duration) -> Result<Dialer, Trouble> {
        let setup = |why: &str| Trouble::Setup(format!("{url} is not a URL this client can use: {why}"));
        let parsed = reqwest::Url::parse(url).map_err(|e| setup(&e.to_string()))?;
        if parsed.scheme() != "http" {
            return Err(setup(
                "the sidecar speaks plain HTTP on this machine (http://127.0.0.1:PORT); reach another machine's through an ssh tunnel",
            ));
        }
        let host = match parsed.host_str() {
            Some(host) if !host.is_empty() => host.trim_start_matches('[').trim_end_matches(']').to_owned(),
            _ => return Err(setup("it names no host")),
        };
        let port = parsed
            .port_or_known_default()
            .ok_or_else(|| setup("it names no port"))?;
        let authority = match parsed.port() {
            Some(port) => format!("{}:{port}", parsed.host_str().unwrap_or_default()),
            None => parsed.host_str().unwrap_or_default().to_owned(),
        };
        Ok(Dialer {
            url: url.to_owned(),
            host,
            port,
            authority,
            connect_timeout,
        })
    }

    /// The addresses to try, in order: an IP as it is, `localhost` as
    /// `127.0.0.1`, any other name as the resolver gives it.
    async fn addresses(&self) -> Result<Vec<SocketAddr>, Trouble> {
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, self.port)]);
        }
        let name = self.host.trim_end_matches('.').to_ascii_lowercase();
        if name == "localhost" || name.ends_with(".localhost") {
            return Ok(vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), self.port)]);
        }
        let found = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| self.unreachable(format!("cannot resolve {}: {e}", self.host)))?;
        Ok(found.collect())
    }

    /// A new connection, not yet proven.
    pub async fn dial(&self) -> Result<Conn, Trouble> {
        let mut why = format!("{} resolves to no address", self.host);
        for address in self.addresses().await? {
            let stream = match tokio::time::timeout(self.connect_timeout, tokio::net::TcpStream::connect(address)).await
            {
                Err(_) => {
                    why = "no connection in time".into();
                    continue;
                }
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    why = "connection refused".into();
                    continue;
                }
                Ok(Err(e)) => {
                    why = e.to_string();
                    continue;
                }
                Ok(Ok(stream)) => stream,
            };
            let _ = stream.set_nodelay(true);
            let peer = stream.peer_addr().unwrap_or(address);
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| self.unreachable(e.to_string()))?;
            // The connection's own task; it ends when the connection closes.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            return Ok(Conn {
                sender,
                peer,
                proven: false,
            });
        }
        Err(self.unreachable(why))
    }

    fn unreachable(&self, why: String) -> Trouble {
        Trouble::Unreachable {
            url: self.url.clone(),
            why,
        }
    }

    /// What an error on an open connection means.
    pub fn broken(&self, e: &hyper::Error) -> Trouble {
        Trouble::Answered {
            url: self.url.clone(),
            what: format!("broke off its answer: {e}"),
        }
    }

    fn request(&self, outgoing: Outgoing<'_>) -> hyper::Request<Full<Bytes>> {
        let mut request = hyper::Request::builder()
            .method(outgoing.method)
            .uri(outgoing.path)
            .header(hyper::header::HOST, &self.authority);
        if let Some(token) = outgoing.bearer {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = match outgoing.json {
            Some(json) => {
                request = request.header(hyper::header::CONTENT_TYPE, "application/json");
                Full::new(Bytes::from(json))
            }
            None => Full::new(Bytes::new()),
        };
        request
            .body(body)
            .expect("a method, a path the API names and plain headers make a valid request; this is a bug")
    }
}

impl Conn {
    pub fn is_open(&self) -> bool {
        !self.sender.is_closed()
    }

    /// Sends a request and waits for its head; the body follows.
    pub async fn send(
        &mut self,
        dialer: &Dialer,
        outgoing: Outgoing<'_>,
    ) -> Result<hyper::Response<Incoming>, hyper::Error> {
        self.sender.ready().await?;
        self.sender.send_request(dialer.request(outgoing)).await
    }

    /// Sends a request and reads the whole answer.
    pub async fn exchange(&mut self, dialer: &Dialer, outgoing: Outgoing<'_>) -> Result<(u16, Vec<u8>), Trouble> {
        let response = self.send(dialer, outgoing).await.map_err(|e| dialer.broken(&e))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| dialer.broken(&e))?
            .to_bytes();
        Ok((status, body.to_vec()))
    }

    /// The connection's sender, kept alive by whoever reads a stream over it.
    pub fn into_sender(self) -> SendRequest<Full<Bytes>> {
        self.sender
    }
}
