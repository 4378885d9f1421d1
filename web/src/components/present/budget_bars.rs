//! Every site's privacy budget as one compact bar each (for the presenter view): name, how much of
//! its ε is spent, from the ledger reports the sites send.

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::frame::dashboard::DashboardStudy;
use crate::roster::Presence;
use crate::session::RoomState;

#[component]
pub fn BudgetBars(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let rows = move || {
        let here: Vec<u32> = state.roster.with(|r| {
            r.with_role(Role::Site)
                .filter(|m| m.presence == Presence::Present)
                .map(|m| m.peer.id)
                .collect()
        });
        study.view.reports.with(|reports| {
            reports
                .iter()
                .map(|(id, r)| {
                    let share = (r.spent / r.budget_epsilon).clamp(0.0, 1.0);
                    view! {
                        <li class="present-budget" class:gone=!here.contains(id) data-testid="present-budget" data-site-id=*id>
                            <span class="present-budget-name">{r.site.clone()}</span>
                            <span class="present-budget-value">{format_value(r.spent)} " / " {format_value(r.budget_epsilon)}</span>
                            <div class="bar"><div class="bar-fill" style=format!("width: {:.1}%", 100.0 * share)></div></div>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="present-budgets">
            <p class="label">"Privacy spent by each site"</p>
            <ul class="present-budget-list">{rows}</ul>
        </div>
    }
}
