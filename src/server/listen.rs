//! Where the sidecar listens and how it takes connections.
//!
//! - **Both loopbacks.** A sidecar on `127.0.0.1:P` also holds `[::1]:P`
//!   (and the other way round). `localhost` resolves to either; a port left
//!   free on the other address is a place where another local account could
//!   listen and pose as the sidecar. Where that address is taken, `serve`
//!   refuses to start and names the holder; where the machine has no such
//!   address, nobody can hold it, and the log says so.
//! - **The connection's own address.** Each request carries the local
//!   address its connection came in on ([`Conn`]); the identity proof names
//!   it, so a relay on another address or port gets a proof that fails.
//! - **Bounded connections.** Connections that never presented the token
//!   are "unproven": they live at most [`UNPROVEN_LIFETIME`], and when the
//!   open connections reach the limit (below the file-descriptor limit) the
//!   oldest unproven one is closed to make room. Idle or half-sent
//!   connections from another account thus can neither fill the process's
//!   descriptors nor hold the user's own client out, which a plain limit
//!   would do. At most [`MAX_UNPROVEN`] of them are open at once (the
//!   oldest closed for a new one), and no connection's request head may
//!   exceed [`MAX_HEAD_BYTES`]: memory spent on strangers stays bounded.
//!   An answer on a connection still unproven says how long the client may
//!   keep it (`Keep-Alive: timeout=N`, a second short of its lifetime's
//!   end, or `Connection: close` near it), so no client sends a request
//!   into the close at its end; a connection that showed the token is kept
//!   alive with no limit.

use anyhow::Context;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a connection that has not presented the token stays open.
/// Every request that needs no token (`/health`, `/v1/identity`) answers at
/// once, so the sidecar's own clients prove themselves well within it.
pub const UNPROVEN_LIFETIME: Duration = Duration::from_secs(10);

/// How long an unproven connection past its lifetime may take to finish
/// the request it is answering.
const UNPROVEN_GRACE: Duration = Duration::from_secs(2);

/// How long, at a shutdown, a connection accepted but not yet asked
/// anything waits for its first request. A client sends it right after
/// connecting; closing such a connection at once would fail a request the
/// kernel already took in (as at a restart in place, where the next
/// sidecar answers every connection the old one did not accept). Within
/// [`super::DRAIN`].
const FIRST_REQUEST_GRACE: Duration = Duration::from_millis(500);

/// Descriptors kept for everything but client connections: the model file,
/// the log, the engine's connections, the lock.
const RESERVED_FDS: u64 = 128;

/// The most connections held open at once, whatever the descriptor limit.
const MAX_CONNECTIONS: u64 = 16_384;

/// The most connections without the token held open at once: each may hold
/// a read buffer of up to [`MAX_HEAD_BYTES`], so strangers can make the
/// sidecar hold at most about 32 MiB. The user's own clients prove
/// themselves with their first request, well before a thousand newer
/// connections could push theirs out.
const MAX_UNPROVEN: usize = 1024;

/// The largest request head (request line and headers) and read buffer of
/// a connection, as nginx's 4 × 8 KiB: the sidecar's clients send a few
/// hundred bytes; a larger head is answered 431. Bodies stream through the
/// buffer and are bounded by `--max-body` instead.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// What a request knows of its connection: the local address it came in on,
/// and whether it has presented the token.
#[derive(Clone, Debug)]
pub struct Conn {
    pub local: SocketAddr,
    proven: Arc<AtomicBool>,
    /// When it is closed unless it has shown the token.
    ends: tokio::time::Instant,
    /// The server's count of open unproven connections.
    unproven: Arc<AtomicUsize>,
}

impl Conn {
    /// Marks the connection as the user's (it sent the token): it is never
    /// closed to make room.
    pub fn prove(&self) {
        if !self.proven.swap(true, Ordering::Relaxed) {
            self.unproven.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The listeners of one server: the address asked for and, for a loopback
/// one, the other family's loopback on the same port.
pub struct Listeners(Vec<TcpListener>);

/// The environment variable that hands listening sockets to the sidecar a
/// restart in place runs: their descriptors, comma-separated.
const HANDED_OVER: &str = "EVOLVE_HUD_LISTEN_FDS";

impl Listeners {
    /// Binds `address`. With port 0 a port free on both loopbacks is
    /// chosen. The listeners a restart in place handed over (see
    /// [`Listeners::hand_over`]) are taken instead, where they listen on
    /// `address`'s port.
    pub async fn bind(address: SocketAddr) -> anyhow::Result<Listeners> {
        if let Some(taken) = take_handed_over(address) {
            return Ok(taken);
        }
        let Some(other) = other_loopback(address.ip()) else {
            return Ok(Listeners(vec![bind_one(address).await?]));
        };
        // With port 0 the kernel picks the first port; it may be taken on
        // the other address, so try a few.
        let tries = if address.port() == 0 { 8 } else { 1 };
        for _ in 0..tries {
            let first = bind_one(address).await?;
            let port = first.local_addr().context("reading the bound address")?.port();
            let second = SocketAddr::new(other, port);
            match TcpListener::bind(second).await {
                Ok(listener) => return Ok(Listeners(vec![first, listener])),
                Err(e) if unavailable(&e) => {
                    tracing::info!(
                        address = %second,
                        "this machine has no {second} to hold beside {}: nobody else can listen there either ({e})",
                        SocketAddr::new(address.ip(), port)
                    );
                    return Ok(Listeners(vec![first]));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && address.port() == 0 => continue,
                Err(e) => {
                    let who = crate::holder::listener_of(&format!("http://{second}"))
                        .map_or_else(String::new, |who| format!(" ({who})"));
                    anyhow::bail!(
                        "cannot listen on {second}{who}: {e}. The sidecar holds both loopback addresses of its port, \
since `localhost` may dial either, and a server there could pose as it. Stop that server, or serve on another \
port (--port, EVOLVE_HUD_PORT)"
                    );
                }
            }
        }
        anyhow::bail!("no port free on both {address} and {other} after 8 tries")
    }

    /// Copies of the listening sockets, kept open through a restart in
    /// place: while the old server drains and the new one starts, clients
    /// wait in the sockets' backlog instead of being refused. The copies
    /// are inherited by the `exec`, and [`with_handed_over`] names them.
    pub fn hand_over(&self) -> Vec<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        // `try_clone_to_owned` sets CLOEXEC; the restart clears it.
        self.0
            .iter()
            .filter_map(|l| l.as_fd().try_clone_to_owned().ok())
            .collect()
    }

    /// The first address, the one asked for.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        self.0[0].local_addr().context("reading the bound address")
    }

    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.0.iter().filter_map(|l| l.local_addr().ok()).collect()
    }
}

/// Marks `kept` to survive an `exec` and returns the environment entry that
/// names them to the next sidecar.
pub fn with_handed_over(kept: &[std::os::fd::OwnedFd]) -> (&'static str, String) {
    use std::os::fd::AsRawFd;
    for fd in kept {
        // SAFETY: fcntl on a descriptor this process owns; clearing
        // FD_CLOEXEC touches nothing else.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) };
    }
    let fds: Vec<String> = kept.iter().map(|fd| fd.as_raw_fd().to_string()).collect();
    (HANDED_OVER, fds.join(","))
}

/// The listeners handed over by the sidecar this one replaced, when each
/// named descriptor is a TCP socket listening on a loopback address at
/// `address`'s port. Anything else is left alone and logged: then the
/// port is bound as usual.
fn take_handed_over(address: SocketAddr) -> Option<Listeners> {
    use std::os::fd::FromRawFd;
    let named = std::env::var(HANDED_OVER).ok()?;
    let mut taken = Vec::new();
    for fd in named.split(',') {
        let Ok(fd) = fd.trim().parse::<i32>() else {
            tracing::warn!("{HANDED_OVER}={named} is not a list of descriptors; binding anew");
            return None;
        };
        // SAFETY: a descriptor the replaced sidecar left open for this one
        // (it cleared only its CLOEXEC); checked below to be a listening
        // socket before it is used, and owned by this value from here on.
        let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
        let ours = listener
            .local_addr()
            .is_ok_and(|a| a.port() == address.port() && a.ip().is_loopback() && address.ip().is_loopback());
        if !ours {
            tracing::warn!(
                fd,
                "a handed-over descriptor is not a listener on port {}; binding anew",
                address.port()
            );
            std::mem::forget(listener);
            return None;
        }
        // Not inherited by anything this sidecar starts.
        // SAFETY: fcntl on a descriptor this process now owns.
        unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&listener),
                libc::F_SETFD,
                libc::FD_CLOEXEC,
            )
        };
        if listener.set_nonblocking(true).is_err() {
            return None;
        }
        taken.push(TcpListener::from_std(listener).ok()?);
    }
    // The one asked for first, as `bind` orders them.
    taken.sort_by_key(|l| l.local_addr().map(|a| a.ip() != address.ip()).unwrap_or(true));
    tracing::info!(
        addresses = ?taken.iter().filter_map(|l| l.local_addr().ok()).collect::<Vec<_>>(),
        "took over the listening sockets of the sidecar this one replaced"
    );
    (!taken.is_empty()).then_some(Listeners(taken))
}

async fn bind_one(address: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address).await.with_context(|| {
        let who = crate::holder::listener_of(&format!("http://{address}")).map_or_else(
            || "is another server using the port?".to_owned(),
            |who| format!("{who}."),
        );
        format!("cannot listen on {address}; {who} Try --port")
    })
}

fn other_loopback(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(v4) if v4 == Ipv4Addr::LOCALHOST => Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        IpAddr::V6(v6) if v6 == Ipv6Addr::LOCALHOST => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        _ => None,
    }
}

/// A bind error that says the address does not exist here (no IPv6).
fn unavailable(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT))
}

/// The open connections, oldest first.
struct Table {
    limit: usize,
    /// The most unproven connections open at once.
    unproven_limit: usize,
    /// How many open connections are unproven ([`Conn::prove`] and a
    /// connection's end count it down).
    unproven: Arc<AtomicUsize>,
    next: u64,
    open: BTreeMap<u64, Entry>,
}

struct Entry {
    proven: Arc<AtomicBool>,
    close: CancellationToken,
}

impl Table {
    /// Room for one more (unproven) connection: closes the oldest unproven
    /// connection when the table is full or the unproven ones reach their
    /// limit. `false` when every open connection is proven and the limit
    /// reached.
    fn make_room(&mut self) -> bool {
        let unproven_full = self.unproven.load(Ordering::Relaxed) >= self.unproven_limit;
        if self.open.len() < self.limit && !unproven_full {
            return true;
        }
        let oldest = self
            .open
            .iter()
            .find(|(_, e)| !e.proven.load(Ordering::Relaxed))
            .map(|(id, _)| *id);
        match oldest.and_then(|id| self.open.remove(&id)) {
            Some(entry) => {
                // Counted down here, not when its task ends: the next
                // accept may come first.
                if !entry.proven.swap(true, Ordering::Relaxed) {
                    self.unproven.fetch_sub(1, Ordering::Relaxed);
                }
                entry.close.cancel();
                true
            }
            None => false,
        }
    }

    /// Enters a new connection, unproven unless `proven`; its id.
    fn enter(&mut self, proven: &Arc<AtomicBool>, close: &CancellationToken) -> u64 {
        if !proven.load(Ordering::Relaxed) {
            self.unproven.fetch_add(1, Ordering::Relaxed);
        }
        let id = self.next;
        self.next += 1;
        self.open.insert(
            id,
            Entry {
                proven: proven.clone(),
                close: close.clone(),
            },
        );
        id
    }

    /// Removes an ended connection (if it was not closed to make room).
    fn leave(&mut self, id: u64) {
        if let Some(entry) = self.open.remove(&id) {
            if !entry.proven.swap(true, Ordering::Relaxed) {
                self.unproven.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// The most connections this process can hold, after raising its soft
/// descriptor limit to the hard one.
fn connection_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 512;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max.min(1 << 20),
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct it is given; a failure leaves
        // the old limit, which the next line reads again.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = raised.rlim_cur;
        }
    }
    let fds: u64 = limit.rlim_cur;
    fds.saturating_sub(RESERVED_FDS).clamp(16, MAX_CONNECTIONS) as usize
}

/// Serves `app` on every listener until `shutdown` is cancelled and the
/// open connections have ended (each is asked to close after its current
/// request). `token_required`: without a token (`--no-auth`) no connection
/// can prove itself, so every one counts as proven.
pub async fn serve(listeners: Listeners, app: Router, token_required: bool, shutdown: CancellationToken) {
    let limit = connection_limit();
    let table = Arc::new(Mutex::new(Table {
        limit,
        unproven_limit: MAX_UNPROVEN.min(limit),
        unproven: Arc::new(AtomicUsize::new(0)),
        next: 0,
        open: BTreeMap::new(),
    }));
    let all_proven = !token_required;
    let ended = Arc::new(tokio::sync::Notify::new());
    let mut accepting = tokio::task::JoinSet::new();
    for listener in listeners.0 {
        let (table, app, shutdown, ended) = (table.clone(), app.clone(), shutdown.clone(), ended.clone());
        accepting.spawn(accept(listener, table, app, all_proven, shutdown, ended));
    }
    while accepting.join_next().await.is_some() {}
    // Wait for the connections to finish their requests.
    loop {
        let notified = ended.notified();
        if lock(&table).open.is_empty() {
            return;
        }
        notified.await;
    }
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    // The table holds no invariant a panic could break halfway.
    table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn accept(
    listener: TcpListener,
    table: Arc<Mutex<Table>>,
    app: Router,
    all_proven: bool,
    shutdown: CancellationToken,
    ended: Arc<tokio::sync::Notify>,
) {
    let mut full_logged = false;
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or memory: the table keeps this
                    // rare, and a pause lets connections end.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(local) = stream.local_addr() else { continue };
        let proven = Arc::new(AtomicBool::new(all_proven));
        let close = CancellationToken::new();
        let (id, unproven) = {
            let mut table = lock(&table);
            if !table.make_room() {
                if !full_logged {
                    tracing::warn!(
                        limit = table.limit,
                        "{} proven connections are open; refusing new ones until some end",
                        table.limit
                    );
                    full_logged = true;
                }
                continue;
            }
            full_logged = false;
            (table.enter(&proven, &close), table.unproven.clone())
        };
        let conn = Conn {
            local,
            proven,
            unproven,
            ends: tokio::time::Instant::now() + UNPROVEN_LIFETIME,
        };
        let (app, table, shutdown, ended) = (app.clone(), table.clone(), shutdown.clone(), ended.clone());
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            // Whether a request has come on this connection, and its signal.
            let asked = Arc::new(AtomicBool::new(false));
            let first = Arc::new(tokio::sync::Notify::new());
            let service = {
                let (conn, asked, first) = (conn.clone(), asked.clone(), first.clone());
                hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                    if !asked.swap(true, Ordering::Relaxed) {
                        first.notify_one();
                    }
                    request.extensions_mut().insert(conn.clone());
                    let (answered, conn) = (tower::ServiceExt::oneshot(app.clone(), request), conn.clone());
                    async move {
                        let mut response = answered.await?;
                        if !conn.proven.load(Ordering::Relaxed) {
                            // A client that kept the connection past its
                            // lifetime would send its next request into the
                            // close (and get no answer): it is told how long
                            // it may keep it, a second short of the end.
                            let left = conn.ends.saturating_duration_since(tokio::time::Instant::now());
                            let keep = left.as_secs().saturating_sub(1);
                            let (name, value) = if keep >= 1 {
                                (
                                    axum::http::header::HeaderName::from_static("keep-alive"),
                                    format!("timeout={keep}"),
                                )
                            } else {
                                (axum::http::header::CONNECTION, "close".to_owned())
                            };
                            if let Ok(value) = axum::http::HeaderValue::from_str(&value) {
                                response.headers_mut().insert(name, value);
                            }
                        }
                        Ok::<_, std::convert::Infallible>(response)
                    }
                })
            };
            // hyper's own header-read timeout is off: it runs from the moment
            // a request has been read, so it cut long streamed answers on the
            // user's own connections. Connections without the token are
            // bounded by UNPROVEN_LIFETIME instead.
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(None)
                .max_header_size(MAX_HEAD_BYTES)
                .max_buf_size(MAX_HEAD_BYTES);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            // At the end of its lifetime an unproven connection is closed
            // gracefully: a request being answered (one that needs no
            // token) is answered first, and an idle one closes at once. One
            // still not closed after UNPROVEN_GRACE (a request whose head
            // never ends) is cut.
            let unproven = tokio::time::sleep(UNPROVEN_LIFETIME);
            let mut unproven = std::pin::pin!(unproven);
            let mut expired = false;
            let mut closing = false;
            // At a shutdown, a connection not yet asked anything closes once
            // its first request has come (and been answered), or after
            // FIRST_REQUEST_GRACE.
            let awaiting = tokio::time::sleep(Duration::ZERO);
            let mut awaiting = std::pin::pin!(awaiting);
            let mut awaiting_first = false;
            let mut stopping = false;
            loop {
                tokio::select! {
                    _ = connection.as_mut() => break,
                    () = close.cancelled() => break,
                    () = shutdown.cancelled(), if !stopping => {
                        stopping = true;
                        if closing {
                            // Already closing: its lifetime ended.
                        } else if asked.load(Ordering::Relaxed) {
                            connection.as_mut().graceful_shutdown();
                            closing = true;
                        } else {
                            awaiting_first = true;
                            awaiting.as_mut().reset(tokio::time::Instant::now() + FIRST_REQUEST_GRACE);
                        }
                    }
                    () = first.notified(), if awaiting_first => {
                        awaiting_first = false;
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    () = awaiting.as_mut(), if awaiting_first => {
                        awaiting_first = false;
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    () = unproven.as_mut(), if !conn.proven.load(Ordering::Relaxed) => {
                        if expired {
                            tracing::debug!(local = %conn.local, "cut a connection without the token that did not close in its grace");
                            break;
                        }
                        expired = true;
                        awaiting_first = false;
                        if !closing {
                            connection.as_mut().graceful_shutdown();
                            closing = true;
                        }
                        unproven.as_mut().reset(tokio::time::Instant::now() + UNPROVEN_GRACE);
                    }
                }
            }
            lock(&table).leave(id);
            ended.notify_waiters();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(proven: bool) -> Entry {
        Entry {
            proven: Arc::new(AtomicBool::new(proven)),
            close: CancellationToken::new(),
        }
    }

    /// `app` served on a free loopback port: its address, what stops it,
    /// and the server's task.
    async fn serving(
        app: Router,
        token_required: bool,
    ) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
        let listeners = Listeners::bind("127.0.0.1:0".parse().expect("an address"))
            .await
            .expect("a free port");
        let address = listeners.local_addr().expect("bound");
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(serve(listeners, app, token_required, shutdown.clone()));
        (address, shutdown, served)
    }

    /// A connection accepted just before a shutdown (a restart in place)
    /// whose request comes right after is answered, not closed unasked.
    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_accepted_before_a_shutdown_gets_its_first_answer() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let app = Router::new().route("/", axum::routing::get(|| async { "answered" }));
        let (address, shutdown, served) = serving(app, false).await;
        let mut client = tokio::net::TcpStream::connect(address).await.expect("connecting");
        // On this one thread, the server accepts while the test waits.
        tokio::time::sleep(Duration::from_millis(50)).await;
        shutdown.cancel();
        tokio::time::sleep(Duration::from_millis(50)).await;
        client
            .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .expect("sending the request");
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.expect("reading the answer");
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("answered"),
            "{answer:?}"
        );
        served.await.expect("the server ends");
    }

    /// An answer without the token says how long the connection may be
    /// kept, short of its lifetime's end, so a client's next request never
    /// meets that end; an answer to the token sets no limit.
    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_without_the_token_is_kept_only_short_of_its_end() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let app = Router::new()
            .route("/open", axum::routing::get(|| async { "open" }))
            .route(
                "/proof",
                axum::routing::get(|axum::Extension(conn): axum::Extension<Conn>| async move {
                    conn.prove();
                    "proven"
                }),
            );
        let (address, shutdown, served) = serving(app, true).await;
        async fn answer(stream: &mut tokio::net::TcpStream, path: &str) -> String {
            let request = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
            stream.write_all(request.as_bytes()).await.expect("asking");
            let mut buf = vec![0; 4096];
            let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
                .await
                .expect("an answer")
                .expect("reading");
            String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase()
        }
        // Without the proof: kept, for less than the lifetime left.
        let mut stranger = tokio::net::TcpStream::connect(address).await.expect("connecting");
        for _ in 0..2 {
            let got = answer(&mut stranger, "/open").await;
            assert!(got.starts_with("http/1.1 200"), "{got:?}");
            let keep: u64 = got
                .split("keep-alive: timeout=")
                .nth(1)
                .and_then(|r| r.split("\r\n").next())
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or_else(|| panic!("a keep-alive limit: {got:?}"));
            assert!((1..UNPROVEN_LIFETIME.as_secs()).contains(&keep), "{got:?}");
        }
        // With it: no limit, on the same connection.
        let mut user = tokio::net::TcpStream::connect(address).await.expect("connecting");
        for path in ["/proof", "/open"] {
            let got = answer(&mut user, path).await;
            assert!(got.starts_with("http/1.1 200"), "{path}: {got:?}");
            assert!(
                !got.contains("keep-alive:") && !got.contains("connection: close"),
                "{path}: {got:?}"
            );
        }
        shutdown.cancel();
        drop((stranger, user));
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("the server ends")
            .expect("joined");
    }

    #[test]
    fn the_oldest_unproven_connection_makes_room() {
        let mut table = Table {
            limit: 3,
            unproven_limit: 3,
            unproven: Arc::new(AtomicUsize::new(2)),
            next: 3,
            open: BTreeMap::from([(0, entry(true)), (1, entry(false)), (2, entry(false))]),
        };
        let second = table.open[&1].close.clone();
        assert!(table.make_room());
        assert!(second.is_cancelled(), "the oldest unproven one is closed");
        assert_eq!(table.open.keys().copied().collect::<Vec<_>>(), [0, 2]);
        assert!(table.make_room(), "below the limit now");
        table.open.insert(3, entry(true));
        table.open.get(&2).expect("open").proven.store(true, Ordering::Relaxed);
        assert!(!table.make_room(), "every connection proven: no room");
        assert_eq!(table.open.len(), 3, "a proven connection is never closed");
    }

    #[test]
    fn unproven_connections_have_a_limit_of_their_own() {
        let mut table = Table {
            limit: 100,
            unproven_limit: 2,
            unproven: Arc::new(AtomicUsize::new(0)),
            next: 0,
            open: BTreeMap::new(),
        };
        let conns: Vec<(Arc<AtomicBool>, CancellationToken)> = (0..3)
            .map(|_| (Arc::new(AtomicBool::new(false)), CancellationToken::new()))
            .collect();
        let user = Conn {
            local: "127.0.0.1:1".parse().expect("an address"),
            proven: conns[0].0.clone(),
            unproven: table.unproven.clone(),
            ends: tokio::time::Instant::now() + UNPROVEN_LIFETIME,
        };
        for (proven, close) in &conns[..2] {
            assert!(table.make_room());
            table.enter(proven, close);
        }
        assert_eq!(table.unproven.load(Ordering::Relaxed), 2);
        // The first proves itself: the second is the oldest stranger.
        user.prove();
        user.prove();
        assert_eq!(table.unproven.load(Ordering::Relaxed), 1, "counted down once");
        assert!(table.make_room());
        table.enter(&conns[2].0, &conns[2].1);
        assert!(table.make_room(), "a third stranger closes the oldest one");
        assert!(conns[1].1.is_cancelled() && !conns[0].1.is_cancelled() && !conns[2].1.is_cancelled());
        assert_eq!(table.unproven.load(Ordering::Relaxed), 1);
        table.leave(1);
        table.leave(2);
        assert_eq!(
            table.unproven.load(Ordering::Relaxed),
            0,
            "an ended stranger is counted out once"
        );
        assert_eq!(table.open.len(), 1);
    }

    #[test]
    fn the_connection_limit_stays_below_the_descriptor_limit() {
        let limit = connection_limit() as u64;
        let mut now = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut now) }, 0);
        assert!(
            limit + RESERVED_FDS <= now.rlim_cur.max(16 + RESERVED_FDS),
            "{limit} of {}",
            now.rlim_cur
        );
    }

    #[test]
    fn each_loopback_has_the_other() {
        assert_eq!(
            other_loopback(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
        assert_eq!(
            other_loopback(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
        assert_eq!(other_loopback("127.0.0.2".parse().unwrap()), None);
        assert_eq!(other_loopback("0.0.0.0".parse().unwrap()), None);
    }
}
