//! The worker's side of the channel: decode what the tab posts, run the [`WorkerState`], post
//! back.

use std::cell::RefCell;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

use crate::worker::protocol::{FromWorker, ToWorker};
use crate::worker::state::WorkerState;

thread_local! {
    static STATE: RefCell<WorkerState> = RefCell::new(WorkerState::default());
}

/// Called by the worker's bootstrap script once the module is initialised.
#[wasm_bindgen]
pub fn capelab_worker_main() {
    // A panic here would leave the tab waiting forever: the page hears of it and reports it
    // ([`crate::crash`]).
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        post(&FromWorker::Crashed(crate::crash::describe(info)));
    }));
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let replies = match serde_wasm_bindgen::from_value::<ToWorker>(event.data()) {
            Ok(message) => {
                STATE.with(|s| s.borrow_mut().handle(message, js_sys::Date::now() as u64))
            }
            Err(e) => vec![FromWorker::Refused(format!("unreadable message from the tab: {e}"))],
        };
        deliver(replies);
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    post(&FromWorker::Ready);
}

/// Posts the replies to the tab, except a [`FromWorker::Fetch`], which this worker does itself:
/// the fetched text goes back into the state as [`ToWorker::VviTable`], never through the tab.
fn deliver(replies: Vec<FromWorker>) {
    for reply in replies {
        match reply {
            FromWorker::Fetch { url } => {
                wasm_bindgen_futures::spawn_local(async move {
                    let joined = crate::fetch::text(&url).await;
                    let message = ToWorker::VviTable { joined };
                    let replies =
                        STATE.with(|s| s.borrow_mut().handle(message, js_sys::Date::now() as u64));
                    deliver(replies);
                });
            }
            other => post(&other),
        }
    }
}

fn post(message: &FromWorker) {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let serializer = serde_wasm_bindgen::Serializer::new();
    match serde::Serialize::serialize(message, &serializer) {
        Ok(value) => {
            let _ = scope.post_message(&value);
        }
        Err(e) => web_sys::console::error_1(&format!("capelab worker: {e}").into()),
    }
}
