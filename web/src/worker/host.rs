/*!
The main thread's end of a site's worker: spawns it, queues what is posted before it is ready,
and hands its messages to a callback.

The worker runs the app's own module (no second build): a tiny module script, made here as a
`blob:` URL, imports the bundle trunk emitted (found from the page's `modulepreload` link),
initialises it and calls [`crate::worker::entry::capelab_worker_main`]. The app's `main` returns at once
outside a window, so no UI is mounted in the worker.
*/

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Blob, BlobPropertyBag, MessageEvent, Url, Worker, WorkerOptions, WorkerType};

use crate::worker::protocol::{FromWorker, ToWorker};

pub struct WorkerHost {
    worker: Worker,
    ready: Rc<RefCell<bool>>,
    queue: Rc<RefCell<Vec<JsValue>>>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl WorkerHost {
    /// Starts the worker; `on_message` gets everything it posts (after `Ready`).
    pub fn spawn(on_message: impl Fn(FromWorker) + 'static) -> Result<Self, String> {
        let script = bootstrap_script()?;
        let bag = BlobPropertyBag::new();
        bag.set_type("text/javascript");
        let parts = js_sys::Array::of1(&JsValue::from_str(&script));
        let blob = Blob::new_with_str_sequence_and_options(&parts, &bag).map_err(js_text)?;
        let url = Url::create_object_url_with_blob(&blob).map_err(js_text)?;
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Module);
        let worker = Worker::new_with_options(&url, &options).map_err(js_text)?;
        let ready = Rc::new(RefCell::new(false));
        let queue: Rc<RefCell<Vec<JsValue>>> = Rc::new(RefCell::new(Vec::new()));
        let (ready_in, queue_in, worker_in) = (ready.clone(), queue.clone(), worker.clone());
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            match serde_wasm_bindgen::from_value::<FromWorker>(event.data()) {
                Ok(FromWorker::Ready) => {
                    *ready_in.borrow_mut() = true;
                    for message in queue_in.borrow_mut().drain(..) {
                        let _ = worker_in.post_message(&message);
                    }
                }
                Ok(message) => on_message(message),
                Err(e) => web_sys::console::error_1(
                    &format!("capelab: unreadable message from the worker: {e}").into(),
                ),
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        Ok(WorkerHost { worker, ready, queue, _on_message: on_message })
    }

    pub fn post(&self, message: &ToWorker) {
        let serializer = serde_wasm_bindgen::Serializer::new();
        let value = match serde::Serialize::serialize(message, &serializer) {
            Ok(v) => v,
            Err(e) => {
                web_sys::console::error_1(&format!("capelab: to the worker: {e}").into());
                return;
            }
        };
        if *self.ready.borrow() {
            let _ = self.worker.post_message(&value);
        } else {
            self.queue.borrow_mut().push(value);
        }
    }
}

impl Drop for WorkerHost {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

/// The worker's module script: the app's bundle, initialised, then the worker's entry point.
fn bootstrap_script() -> Result<String, String> {
    let document = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
    let href = |selector: &str| -> Result<String, String> {
        let link = document
            .query_selector(selector)
            .map_err(js_text)?
            .ok_or_else(|| format!("the page has no {selector} (built without trunk?)"))?;
        let href = link.get_attribute("href").ok_or("a link without href")?;
        let base = document.base_uri().map_err(js_text)?.unwrap_or_default();
        Url::new_with_base(&href, &base).map(|u| u.href()).map_err(js_text)
    };
    let js = href("link[rel=modulepreload]")?;
    let wasm = href("link[rel=preload][as=fetch]")?;
    Ok(format!(
        "import init, {{ capelab_worker_main }} from {js:?};\n\
         await init({{ module_or_path: {wasm:?} }});\n\
         capelab_worker_main();\n"
    ))
}

fn js_text(e: JsValue) -> String {
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}
