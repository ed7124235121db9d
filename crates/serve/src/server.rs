//! The listening side of the embedded target: the socket (backlog via socket2), the tokio
//! runtime and its worker threads, the accept loop with its connection limit, hyper's HTTP/1.1
//! connection settings (keep-alive timeout, no Date header), and a clean stop.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Semaphore};

use crate::body::ResponseBody;
use crate::idle::{run_until_idle, Activity, WatchedIo};
use crate::routes::{respond, Reply, RouteContext};
use crate::session;
use crate::{ServeError, ServeOptions};
use http_body_util::BodyExt;

/// How long a client may take to send its first request's head when keep-alive is off
/// (`keepalive_timeout = 0`); with keep-alive on, the keep-alive timeout is used.
const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// After an accept error (out of file descriptors, mostly), wait this long before the next
/// try instead of spinning.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(20);

/// What every connection of one server shares.
struct Shared {
    http: http1::Builder,
    routes: RouteContext,
    /// A connection with no traffic for this long is closed.
    idle_timeout: Duration,
    /// The session pages' logins and cookies (`session`).
    sessions: crate::session::Sessions,
}

/// A running embedded server. Dropping it stops it, like [`EmbeddedServer::shutdown`].
pub struct EmbeddedServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for EmbeddedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl EmbeddedServer {
    /// Binds (port 0 = a free port), starts serving on its own runtime threads, returns once
    /// listening: a connection made after this returns is accepted (or waits in the backlog).
    pub fn start(opts: ServeOptions) -> Result<EmbeddedServer, ServeError> {
        validate(&opts)?;
        let listener = bind(opts.addr, opts.backlog)?;
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: opts.addr,
            source,
        })?;

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.workers)
            .thread_name("webtune-serve")
            .enable_io()
            .enable_time()
            .build()
            .map_err(ServeError::Runtime)?;

        let keep_alive = !opts.keepalive_timeout.is_zero();
        let mut http = http1::Builder::new();
        http.keep_alive(keep_alive)
            // Idle connections are closed by `idle::run_until_idle` instead: hyper's timer
            // costs an armed timer per request.
            .header_read_timeout(None)
            // RFC 9110 §6.6.1 lets a server leave Date out; a benchmark target saves the work.
            .auto_date_header(false);
        let shared = Arc::new(Shared {
            http,
            routes: RouteContext {
                keep_alive,
                stopping: AtomicBool::new(false),
            },
            idle_timeout: if keep_alive {
                opts.keepalive_timeout
            } else {
                FIRST_REQUEST_TIMEOUT
            },
            sessions: Default::default(),
        });

        let (stop_tx, stop_rx) = oneshot::channel();
        let connection_slots = Arc::new(Semaphore::new(opts.max_connections));
        let loop_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("webtune-serve-main".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let accepting =
                        tokio::spawn(accept_loop(listener, connection_slots, loop_shared));
                    // Stop on request, or when the handle is gone without asking.
                    let _ = stop_rx.await;
                    accepting.abort();
                    let _ = accepting.await;
                });
                // Dropping the runtime drops every connection task: sockets close, the worker
                // threads end and are joined here.
                drop(runtime);
            })
            .map_err(ServeError::Runtime)?;

        Ok(EmbeddedServer {
            local_addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// What the session pages (`/login`, `/reply`, ...) have seen so far.
    pub fn session_stats(&self) -> crate::session::SessionStats {
        self.shared.sessions.stats()
    }

    /// Stops accepting, closes connections (a response in progress is cut off), joins the
    /// threads. The port is free when this returns. Also done on Drop.
    pub fn shutdown(self) {
        drop(self);
    }

    fn stop_and_join(&mut self) {
        self.shared.routes.stopping.store(true, Ordering::Relaxed);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panic inside the server thread has already been reported by the panic hook;
            // there is nothing more to do with it here.
            let _ = thread.join();
        }
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn validate(opts: &ServeOptions) -> Result<(), ServeError> {
    if opts.workers == 0 {
        return Err(ServeError::InvalidOption(
            "workers must be at least 1".into(),
        ));
    }
    if opts.max_connections == 0 || opts.max_connections > Semaphore::MAX_PERMITS {
        return Err(ServeError::InvalidOption(format!(
            "max_connections must be between 1 and {}",
            Semaphore::MAX_PERMITS
        )));
    }
    if opts.backlog == 0 || opts.backlog > i32::MAX as u32 {
        return Err(ServeError::InvalidOption(format!(
            "backlog must be between 1 and {}",
            i32::MAX
        )));
    }
    Ok(())
}

/// A non-blocking listening socket with the given backlog. SO_REUSEADDR lets a restarted
/// server take its port back while old connections sit in TIME_WAIT; it does not let two
/// servers listen on one port.
fn bind(addr: SocketAddr, backlog: u32) -> Result<StdTcpListener, ServeError> {
    let explain = |source: io::Error| match source.kind() {
        io::ErrorKind::AddrInUse => ServeError::AddrInUse { addr },
        io::ErrorKind::AddrNotAvailable => ServeError::AddrNotAvailable { addr },
        io::ErrorKind::PermissionDenied => ServeError::PermissionDenied { addr },
        _ => ServeError::Bind { addr, source },
    };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(explain)?;
    socket.set_reuse_address(true).map_err(explain)?;
    socket.set_nonblocking(true).map_err(explain)?;
    socket.bind(&addr.into()).map_err(explain)?;
    // The kernel silently caps this at net.core.somaxconn.
    let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
    socket.listen(backlog).map_err(explain)?;
    Ok(socket.into())
}

/// Accepts connections while fewer than `max_connections` are open; at the limit it stops
/// calling accept, so new connections wait in the listen backlog until one closes.
async fn accept_loop(listener: StdTcpListener, slots: Arc<Semaphore>, shared: Arc<Shared>) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(_) => return,
    };
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return; // the semaphore is never closed; nothing to serve if it were
        };
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(_) => {
                drop(slot);
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        // Small responses go out at once instead of waiting for Nagle's timer.
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let activity = Arc::new(Activity::default());
            let handler = Handler {
                shared: Arc::clone(&shared),
                activity: Arc::clone(&activity),
            };
            // Errors are the client's doing (reset, garbage); the connection simply ends.
            let connection = shared
                .http
                .serve_connection(WatchedIo::new(stream, Arc::clone(&activity)), handler);
            run_until_idle(connection, &activity, shared.idle_timeout).await;
            drop(slot);
        });
    }
}

/// The hyper service of one connection.
struct Handler {
    shared: Arc<Shared>,
    activity: Arc<Activity>,
}

impl Service<Request<Incoming>> for Handler {
    type Response = Response<ResponseBody>;
    type Error = std::convert::Infallible;
    type Future = Answer;

    fn call(&self, req: Request<Incoming>) -> Answer {
        if session::is_session_path(req.uri().path()) {
            let cookie = session::cookie_of(req.headers());
            if !session::wants_body(req.method()) {
                let (method, path) = (req.method().clone(), req.uri().path().to_string());
                return Answer::Ready(Some(self.shared.sessions.answer(
                    &method,
                    &path,
                    cookie.as_deref(),
                    b"",
                )));
            }
            let shared = Arc::clone(&self.shared);
            return Answer::Reading(Box::pin(async move {
                let (head, body) = req.into_parts();
                // A body that cannot be read is answered as an empty form (403 or 400).
                let bytes = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                shared
                    .sessions
                    .answer(&head.method, head.uri.path(), cookie.as_deref(), &bytes)
            }));
        }
        match respond(&req, &self.shared.routes) {
            Reply::Now(response) => Answer::Ready(Some(response)),
            Reply::After(delay, response) => {
                self.activity.set_answer_pending(true);
                Answer::Delayed {
                    sleep: Box::pin(tokio::time::sleep(delay)),
                    response: Some(response),
                    activity: Arc::clone(&self.activity),
                }
            }
        }
    }
}

/// A response now, or after a timer (`/sleep`): no thread is held while waiting.
enum Answer {
    Ready(Option<Response<ResponseBody>>),
    /// A session page that reads the request's body first (`POST /login`, `/reply`).
    Reading(Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send>>),
    Delayed {
        sleep: Pin<Box<tokio::time::Sleep>>,
        response: Option<Response<ResponseBody>>,
        /// Told when the answer is ready, so the idle watchdog leaves the wait alone.
        activity: Arc<Activity>,
    },
}

impl Future for Answer {
    type Output = Result<Response<ResponseBody>, std::convert::Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (response, ready) = match self.get_mut() {
            Answer::Reading(reading) => return reading.as_mut().poll(cx).map(Ok),
            Answer::Ready(response) => (response, true),
            Answer::Delayed {
                sleep,
                response,
                activity,
            } => {
                let ready = sleep.as_mut().poll(cx).is_ready();
                if ready {
                    activity.set_answer_pending(false);
                }
                (response, ready)
            }
        };
        if !ready {
            return Poll::Pending;
        }
        match response.take() {
            Some(response) => Poll::Ready(Ok(response)),
            // Polled again after it completed: hyper never does; answer the same way a
            // finished future would rather than panic.
            None => Poll::Pending,
        }
    }
}
