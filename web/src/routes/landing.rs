//! The first screen: create a room (and become its dashboard) or join one as a site.

use leptos::prelude::*;

use capelab_core::wire::Role;

use crate::app::Screen;
use crate::room_code;
use crate::transport::Hello;

/// Both choices, or only the join form when the tab was opened from a join link.
#[component]
pub fn Landing(invited_room: Option<String>, go: Callback<Screen>) -> impl IntoView {
    let content = match invited_room {
        Some(code) => view! {
            <section class="card card-wide">
                <h2>"Join room " <span class="code-inline">{code.clone()}</span></h2>
                <JoinForm code=code.clone() go />
                <p class="muted">
                    "Not the room you wanted? "
                    <a href="/" on:click=move |ev| {
                        ev.prevent_default();
                        go.run(Screen::Landing { invited_room: None });
                    }>"Start over"</a>
                </p>
            </section>
        }
        .into_any(),
        None => view! {
            <section class="card">
                <h2>"Create a room"</h2>
                <p>"Your tab becomes the room's dashboard: it shows a code and a link for the sites."</p>
                <CreateForm go />
            </section>
            <section class="card">
                <h2>"Join a room"</h2>
                <p>"Your tab becomes a site. Type the code shown on the dashboard."</p>
                <JoinForm code=String::new() go />
            </section>
        }
        .into_any(),
    };
    view! {
        <header class="topbar">
            <h1 class="brand">"capelab"</h1>
        </header>
        <main class="landing">
            <p class="lede">"Private computation across sites, live in the classroom."</p>
            <div class="cards">{content}</div>
        </main>
    }
}

#[component]
fn CreateForm(go: Callback<Screen>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        go.run(Screen::Room(Hello::Create { name: name.get_untracked().trim().to_owned() }));
    };
    view! {
        <form class="form" on:submit=submit>
            <label for="create-name">"Your name (optional)"</label>
            <input id="create-name" maxlength="40" placeholder="Teacher" autocomplete="off" bind:value=name />
            <button type="submit" class="button button-primary" data-testid="create-room">
                "Create a room"
            </button>
        </form>
    }
}

/// The join form; `code` prefilled (from a link) hides the code field.
#[component]
fn JoinForm(code: String, go: Callback<Screen>) -> impl IntoView {
    let from_link = !code.is_empty();
    let typed_code = RwSignal::new(code);
    let name = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match room_code::normalize(&typed_code.get_untracked()) {
            Ok(room) => go.run(Screen::Room(Hello::Join {
                room,
                role: Role::Site,
                name: name.get_untracked().trim().to_owned(),
                resume: None,
            })),
            Err(err) => error.set(Some(err.to_string())),
        }
    };
    view! {
        <form class="form" on:submit=submit>
            <Show when=move || !from_link>
                <label for="join-code">"Room code"</label>
                <input
                    id="join-code"
                    class="code-input"
                    maxlength="32"
                    placeholder="K7QX2M"
                    autocomplete="off"
                    autocapitalize="characters"
                    spellcheck="false"
                    bind:value=typed_code
                />
            </Show>
            <label for="join-name">"Your name (optional)"</label>
            <input id="join-name" maxlength="40" placeholder="e.g. Clinic North" autocomplete="off" autofocus=from_link bind:value=name />
            {move || error.get().map(|e| view! { <p class="form-error" role="alert">{e}</p> })}
            <button type="submit" class="button button-primary" data-testid="join-room">
                "Join as a site"
            </button>
        </form>
    }
}
