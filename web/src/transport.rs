/*!
The browser's [`Transport`]: capelab's wire format over the relay's websocket.

This is the only file that touches a `WebSocket`. It opens sockets to `ws(s)://{host}/ws` (the
relay serves the app and the socket on the same origin), feeds what happens to the sans-IO
[`Link`], queues the resulting [`TransportEvent`]s and calls `wake` whenever something new can be
polled or the [`LinkStatus`] changed. It knows nothing about Leptos; `session.rs` turns `wake` into
a reactive update.

Protocol drivers written against [`Transport`] run unchanged on this and on
`capelab_core::transport::MemoryRoom`.

Lifetime: [`WsTransport`] is a cheap handle. Socket callbacks and the retry timer hold only weak
references, so dropping the last handle closes the socket and cancels any retry.
*/

mod link;
mod pace;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use capelab_core::transport::{Transport, TransportError, TransportEvent};
use capelab_core::wire::To;
use gloo::timers::callback::Timeout;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CloseEvent, Event, MessageEvent, WebSocket};

pub use link::{Hello, Identity, LinkStatus};
use link::{Link, Step};
use pace::Pacer;

/// The relay's websocket address for the page's own origin: `ws(s)://{host}/ws`.
pub fn relay_url() -> Option<String> {
    let location = web_sys::window()?.location();
    let scheme = if location.protocol().ok()? == "https:" { "wss" } else { "ws" };
    Some(format!("{scheme}://{}/ws", location.host().ok()?))
}

/// A participant's connection to a room through the relay, reconnecting on its own.
#[derive(Clone)]
pub struct WsTransport {
    inner: Rc<RefCell<Inner>>,
}

struct Inner {
    url: String,
    link: Link,
    socket: Option<Socket>,
    /// Which socket the callbacks belong to: callbacks of a replaced socket are ignored.
    generation: u64,
    retry: Option<Timeout>,
    events: VecDeque<TransportEvent>,
    wake: Rc<dyn Fn()>,
    /// Frames over the relay's rate wait here (created at the first send after `Welcome`).
    pacer: Option<Pacer>,
    flush: Option<Timeout>,
}

/// A live `WebSocket` and the callbacks that must outlive it.
struct Socket {
    ws: WebSocket,
    _on_open: Closure<dyn FnMut(Event)>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_close: Closure<dyn FnMut(CloseEvent)>,
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        // 1000 = normal closure. Closing a closed socket is a no-op; nothing to do if it throws.
        let _ = self.ws.close_with_code(1000);
    }
}

impl WsTransport {
    /// Opens the first socket to `url` and enters the room as `hello` says. `wake` is called
    /// (never re-entrantly) whenever events are waiting or [`WsTransport::status`] changed.
    pub fn connect(url: String, hello: Hello, wake: impl Fn() + 'static) -> Self {
        let inner = Rc::new(RefCell::new(Inner {
            url,
            link: Link::new(hello),
            socket: None,
            generation: 0,
            retry: None,
            events: VecDeque::new(),
            wake: Rc::new(wake),
            pacer: None,
            flush: None,
        }));
        open_socket(&inner);
        WsTransport { inner }
    }

    pub fn status(&self) -> LinkStatus {
        self.inner.borrow().link.status().clone()
    }

    /// Who we are in the room (with the resume token), once the relay welcomed us.
    pub fn identity(&self) -> Option<Identity> {
        self.inner.borrow().link.identity().cloned()
    }

    /// A handle that does not keep the connection open.
    pub fn downgrade(&self) -> WeakTransport {
        WeakTransport(Rc::downgrade(&self.inner))
    }

    /// Leaves the room for good: closes the socket and stops reconnecting.
    pub fn leave(&self) {
        let step = self.inner.borrow_mut().link.leave();
        apply(&self.inner, step);
    }
}

/// A [`WsTransport`] that may be gone: what the crash handler holds ([`crate::crash`]).
#[derive(Clone)]
pub struct WeakTransport(Weak<RefCell<Inner>>);

impl WeakTransport {
    /// Sends one frame to the whole room at once (past the pacer) and closes the socket without
    /// reconnecting: a crashing tab's last words. Never panics and never waits: when the
    /// transport is busy (borrowed at the moment of the crash) nothing is sent, and the close
    /// alone tells the room. The relay keeps the seat for a while, so a reload resumes it.
    pub fn last_words(&self, kind: &str, payload: &[u8]) {
        let Some(this) = self.0.upgrade() else { return };
        let Ok(mut inner) = this.try_borrow_mut() else { return };
        if let (Ok(text), Some(socket)) =
            (inner.link.prepare_send(To::All, kind, payload), inner.socket.as_ref())
        {
            let _ = socket.ws.send_with_str(&text);
        }
        inner.retry = None;
        inner.flush = None;
        inner.pacer = None;
        // Dropping the socket closes it (code 1000); the link is told nothing, so it never
        // reconnects from this broken instance.
        inner.socket = None;
    }
}

impl Transport for WsTransport {
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError> {
        {
            let mut inner = self.inner.borrow_mut();
            let text = inner.link.prepare_send(to, kind, payload)?;
            inner.socket.as_ref().ok_or(TransportError::NotConnected)?;
            let rate = inner.link.identity().map_or(50, |i| i.limits.max_messages_per_second);
            inner.pacer.get_or_insert_with(|| Pacer::new(rate, js_sys::Date::now())).push(text);
        }
        flush(&self.inner)
    }

    fn poll_event(&mut self) -> Option<TransportEvent> {
        self.inner.borrow_mut().events.pop_front()
    }
}

/// Sends the frames the pacer lets go now; the rest wait for a timer.
fn flush(this: &Rc<RefCell<Inner>>) -> Result<(), TransportError> {
    let mut inner = this.borrow_mut();
    let Some(pacer) = inner.pacer.as_mut() else { return Ok(()) };
    let due = pacer.due(js_sys::Date::now());
    let wait = pacer.wait_ms();
    let mut result = Ok(());
    if let Some(socket) = inner.socket.as_ref() {
        for text in due {
            // `send` throws only when the socket is not open; the close event follows and
            // reconnects.
            if socket.ws.send_with_str(&text).is_err() {
                result = Err(TransportError::NotConnected);
            }
        }
    } else if !due.is_empty() {
        result = Err(TransportError::NotConnected);
    }
    if inner.flush.is_none()
        && let Some(ms) = wait
    {
        let weak = Rc::downgrade(this);
        inner.flush = Some(Timeout::new(ms, move || {
            if let Some(this) = weak.upgrade() {
                this.borrow_mut().flush = None;
                let _ = flush(&this);
            }
        }));
    }
    result
}

/// Opens a new socket and wires its callbacks to the link.
fn open_socket(this: &Rc<RefCell<Inner>>) {
    let mut inner = this.borrow_mut();
    inner.retry = None;
    inner.socket = None;
    inner.generation += 1;
    let generation = inner.generation;
    let ws = match WebSocket::new(&inner.url) {
        Ok(ws) => ws,
        Err(err) => {
            let reason = format!("cannot open {}: {}", inner.url, js_error_text(&err));
            let step = inner.link.on_close(link::CLOSE_ABNORMAL, &reason);
            drop(inner);
            apply(this, step);
            return;
        }
    };
    let weak = Rc::downgrade(this);
    let on_open = callback(&weak, generation, |link, _: Event| link.on_open());
    let on_message =
        callback(&weak, generation, |link, event: MessageEvent| match event.data().as_string() {
            Some(text) => link.on_text(&text),
            None => Step {
                warning: Some("ignored a binary frame: the relay speaks JSON text".into()),
                ..Step::default()
            },
        });
    let on_close = callback(&weak, generation, |link, event: CloseEvent| {
        link.on_close(event.code(), &close_reason(&event))
    });
    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    inner.socket =
        Some(Socket { ws, _on_open: on_open, _on_message: on_message, _on_close: on_close });
}

/// A socket callback that feeds the link, if the transport still exists and the socket is current.
fn callback<E: wasm_bindgen::convert::FromWasmAbi + 'static>(
    weak: &Weak<RefCell<Inner>>,
    generation: u64,
    handle: impl Fn(&mut Link, E) -> Step + 'static,
) -> Closure<dyn FnMut(E)> {
    let weak = weak.clone();
    Closure::new(move |event: E| {
        let Some(this) = weak.upgrade() else { return };
        let step = {
            let mut inner = this.borrow_mut();
            if inner.generation != generation {
                return;
            }
            handle(&mut inner.link, event)
        };
        apply(&this, step);
    })
}

/// Carries out what the link asked for, then wakes the UI once.
fn apply(this: &Rc<RefCell<Inner>>, step: Step) {
    let wake = {
        let mut inner = this.borrow_mut();
        inner.events.extend(step.events);
        if let Some(warning) = &step.warning {
            web_sys::console::warn_1(&format!("capelab transport: {warning}").into());
        }
        if let (Some(text), Some(socket)) = (&step.send, &inner.socket)
            && socket.ws.send_with_str(text).is_err()
        {
            // Not open after all; its close event arrives next and drives the retry.
            web_sys::console::warn_1(
                &"capelab transport: could not send on a closing socket".into(),
            );
        }
        if step.close || step.retry_in_ms.is_some() {
            inner.socket = None;
        }
        if matches!(inner.link.status(), LinkStatus::Failed { .. }) {
            inner.retry = None;
        } else if let Some(delay) = step.retry_in_ms {
            let weak = Rc::downgrade(this);
            inner.retry = Some(Timeout::new(delay, move || {
                if let Some(this) = weak.upgrade() {
                    open_socket(&this);
                }
            }));
        }
        inner.wake.clone()
    };
    wake();
}

fn close_reason(event: &CloseEvent) -> String {
    match (event.code(), event.reason()) {
        (code, reason) if reason.is_empty() => format!("connection closed (code {code})"),
        (code, reason) => format!("connection closed (code {code}: {reason})"),
    }
}

fn js_error_text(err: &wasm_bindgen::JsValue) -> String {
    err.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| err.as_string())
        .unwrap_or_else(|| "unknown error".into())
}
