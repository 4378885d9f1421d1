//! The recent envelopes as the relay sees them: who, to whom, which kind, how many bytes. The
//! relay never reads payloads; this is everything it could log.

use leptos::prelude::*;

use crate::frame::wire::WireLine;

#[component]
pub fn WirePanel(
    lines: RwSignal<Vec<WireLine>>,
    total: RwSignal<usize>,
    #[prop(into)] me: Signal<Option<u32>>,
) -> impl IntoView {
    let rows = move || {
        let me = me.get().map_or_else(|| "me".to_owned(), |id| format!("#{id}"));
        lines
            .get()
            .into_iter()
            .rev()
            .map(|l| {
                let other = l.peer.map_or_else(|| "everyone".to_owned(), |p| format!("#{p}"));
                let (from, to) = match l.direction {
                    crate::frame::wire::Direction::Received => (other, me.clone()),
                    _ => (me.clone(), other),
                };
                view! {
                    <tr class=format!("wire-{}", l.direction.as_str())>
                        <td>{from}</td><td>"→ " {to}</td><td class="mono">{l.kind}</td>
                        <td class="num">{l.bytes} " B"</td><td>{l.direction.as_str()}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <details class="card span-all wire" data-testid="wire">
            <summary>
                <h2 class="inline">"What the relay sees"</h2>
                <span class="muted" data-testid="wire-total" data-total=move || total.get()>{move || format!(" · {} envelopes so far; the newest first", total.get())}</span>
            </summary>
            <p class="muted">
                "The relay routes envelopes by their headers and never opens a payload. This is all it "
                "learns: who sent what kind of message to whom, and its size."
            </p>
            <table class="numbers wire-table">
                <tr><th>"from"</th><th>"to"</th><th>"kind"</th><th>"size"</th><th></th></tr>
                {rows}
            </table>
        </details>
    }
}
