/*!
What a tab does when its code hits an internal error (a Rust panic): never a silent dead page.

A panic in wasm aborts the instance's current call, and every `RefCell` borrowed at that moment
stays borrowed: the page may look alive but would refuse every later click. So the panic hook
([`install`]) does only what needs none of the app's state: it writes a banner straight into the
page ("this tab hit an internal error: …; reload to rejoin; your ledger is kept"), sends the room
one notice ([`NOTICE_KIND`]: the dashboard and the sites say which participant it was) and closes
the socket, so the room sees the tab leave at once and its studies handle a departure as they
always do. A reload resumes the seat (the saved resume token) and reloads the ledger from storage,
where every release was saved as it was made.

A worker's panic comes to the page as [`crate::worker::protocol::FromWorker::Crashed`] and is
reported the same way ([`report`]).
*/

use std::cell::RefCell;

use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

use crate::transport::WeakTransport;

/// The kind of the notice a crashing tab sends to the room; its payload is the error in words.
pub const NOTICE_KIND: &str = "tab/internal-error";

thread_local! {
    /// The room this tab is in, for the notice (weak: a tab that left the room keeps no socket).
    static ROOM: RefCell<Option<WeakTransport>> = const { RefCell::new(None) };
    /// Set once a crash was reported: later panics (the state is broken by then) add nothing.
    static CRASHED: RefCell<bool> = const { RefCell::new(false) };
}

/// Installs the panic hook: the console's message (as before), then [`report`].
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        report(&describe(info));
    }));
}

/// The room this tab's notice goes to (replaced when the tab enters another room).
pub fn watch(transport: WeakTransport) {
    let _ = ROOM.try_with(|r| r.try_borrow_mut().map(|mut r| *r = Some(transport)));
}

/// Reports an internal error once: the banner, the room's notice, the socket closed.
pub fn report(what: &str) {
    let first = CRASHED
        .try_with(|c| c.try_borrow_mut().map(|mut c| !std::mem::replace(&mut *c, true)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or(false);
    if !first {
        return;
    }
    show_banner(what);
    let room = ROOM.try_with(|r| r.try_borrow().ok().and_then(|r| r.clone())).ok().flatten();
    if let Some(room) = room {
        room.last_words(NOTICE_KIND, what.as_bytes());
    }
}

/// The panic's message and where it happened, in one line.
pub fn describe(info: &std::panic::PanicHookInfo<'_>) -> String {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "an unexpected failure".to_owned());
    match info.location() {
        Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
        None => message,
    }
}

/// What a room's other tabs show when a participant's tab sent [`NOTICE_KIND`].
pub fn notice_sentence(who: &str, payload: &[u8]) -> String {
    let what = String::from_utf8_lossy(payload);
    let what: String = what.chars().take(300).collect();
    format!(
        "{who}'s tab hit an internal error and left the room ({what}). Its user can reload the \
         tab to rejoin."
    )
}

/// Writes the banner at the top of the page with the DOM alone (no reactive state: it may be
/// borrowed forever by now).
fn show_banner(what: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    let Some(body) = document.body() else { return };
    let Ok(banner) = document.create_element("div") else { return };
    banner.set_class_name("crash-banner");
    let _ = banner.set_attribute("role", "alert");
    let _ = banner.set_attribute("data-testid", "crash-banner");
    let Ok(text) = document.create_element("p") else { return };
    text.set_text_content(Some(&format!(
        "This tab hit an internal error: {what}. Reload to rejoin the room; your ledger is kept."
    )));
    let _ = banner.append_child(&text);
    if let Ok(button) = document.create_element("button") {
        let _ = button.set_attribute("type", "button");
        button.set_class_name("button button-primary");
        button.set_text_content(Some("Reload"));
        let reload = Closure::<dyn Fn()>::new(|| {
            if let Some(w) = web_sys::window() {
                let _ = w.location().reload();
            }
        });
        let _ = button.add_event_listener_with_callback("click", reload.as_ref().unchecked_ref());
        // The banner lives until the reload.
        reload.forget();
        let _ = banner.append_child(&button);
    }
    let _ = body.insert_before(&banner, body.first_child().as_ref());
}

/// A deliberate internal error, for the end-to-end test of this module (a real panic, through
/// the real hook). Nothing in the app calls it.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn capelab_test_internal_error() {
    panic!("a deliberate internal error, raised by the end-to-end test of the crash banner");
}
