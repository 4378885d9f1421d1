//! A site's view of its part in a Joint ICA study: its own data at a glance (a few frames and a
//! time course of its first subject: never sent), where its role is, the noise it added to each
//! release next to the exact value, and its last gradient beside what it sent. A site may load
//! its own data matrix instead of generating subjects.

use leptos::prelude::*;
use leptos::web_sys;

use crate::components::charts::Chart;
use crate::components::charts::heatmap::{self, HeatmapSpec, Tile};
use crate::components::charts::line::{self, LineChartSpec, Series};
use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::PALETTE;
use crate::download;
use crate::study_driver::site::SiteStudy;
use crate::worker::protocol::OwnData;
use crate::worker::view::{IcaSiteView, step_title};

#[component]
pub fn IcaSitePanel(study: SiteStudy) -> impl IntoView {
    view! {
        {move || study.view.ica.get().map(|view| view! { <IcaSiteStep view /> })}
        <OwnDataCard study />
    }
}

#[component]
fn IcaSiteStep(view: IcaSiteView) -> impl IntoView {
    let data = view.data.clone().map(|d| {
        let frames_svg = d.grid.map(|g| {
            let tiles = d
                .frames
                .iter()
                .enumerate()
                .map(|(t, f)| Tile::square(format!("t = {t}"), g, f))
                .collect();
            heatmap::render(
                &HeatmapSpec {
                    title: "Your first subject, first time points (kept in this tab)".into(),
                    rows: vec![("frames".into(), tiles)],
                    tile: 72.0,
                    note: None,
                },
                "ica-site-frames",
            )
        });
        let course: Vec<(f64, f64)> =
            d.course.iter().enumerate().map(|(t, v)| (t as f64, *v)).collect();
        let course_svg = line::render(
            &LineChartSpec {
                title: format!("Time course at voxel {} (its most active)", d.course_voxel),
                x_label: "time point".into(),
                y_label: "signal".into(),
                x: Scale::linear_fit(course.iter().map(|p| p.0), &[0.0]),
                y: Scale::linear_fit(course.iter().map(|p| p.1), &[0.0]),
                series: vec![Series { name: "voxel signal".into(), color: PALETTE[0], points: course, dashed: false, dots: false }],
                markers: Vec::new(),
                note: None,
            },
            "ica-site-course",
        );
        view! {
            <p class="muted" data-testid="ica-site-data" data-subjects=d.subjects data-samples=d.samples>
                {format!("{} subjects, {} time points, D = {} voxels: {}.", d.subjects, d.samples, d.voxels, d.origin)}
            </p>
            {frames_svg.map(|svg| view! {
                <Chart markup=Signal::stored(svg) id="ica-site-frames".to_owned() file_stem="capelab-site-frames".to_owned() testid="ica-site-frames" />
            })}
            <Chart markup=Signal::stored(course_svg) id="ica-site-course".to_owned() file_stem="capelab-site-course".to_owned() testid="ica-site-course" />
        }
    });
    let noise = (!view.noise.is_empty()).then(|| {
        let stat: Vec<(f64, f64)> = view.noise.iter().map(|p| (f64::from(p.iteration), p.statistic_norm)).collect();
        let noise: Vec<(f64, f64)> = view.noise.iter().map(|p| (f64::from(p.iteration), p.noise_norm)).collect();
        let last = view.noise.last().copied();
        let svg = line::render(
            &LineChartSpec {
                title: "Each release: the exact value and the noise added".into(),
                x_label: "iteration".into(),
                y_label: "L2 norm".into(),
                x: Scale::linear_fit(stat.iter().map(|p| p.0), &[0.0]),
                y: Scale::linear_fit(stat.iter().chain(&noise).map(|p| p.1), &[0.0]),
                series: vec![
                    Series { name: "‖exact statistic‖ (never sent)".into(), color: PALETTE[0], points: stat, dashed: false, dots: view.noise.len() < 3 },
                    Series { name: "‖noise added‖ (CAPE: mostly zero-sum)".into(), color: PALETTE[1], points: noise, dashed: false, dots: view.noise.len() < 3 },
                ],
                markers: Vec::new(),
                note: last.and_then(|p| p.zero_sum_norm.map(|z| format!(
                    "Last release: ‖noise‖ = {}, of which the zero-sum part ‖e_s‖ = {} cancels in the dashboard's average.",
                    format_value(p.noise_norm), format_value(z)
                ))),
            },
            "ica-site-noise",
        );
        view! { <Chart markup=Signal::stored(svg) id="ica-site-noise".to_owned() file_stem="capelab-site-noise".to_owned() testid="ica-site-noise" /> }
    });
    let gradient = match (&view.last_gradient, &view.last_release) {
        (Some(g), Some(rel)) if view.components > 0 => {
            let r = view.components;
            let svg = heatmap::render(
                &HeatmapSpec {
                    title: "Last iteration: your gradient and what left this tab".into(),
                    rows: vec![(
                        "R×R".into(),
                        vec![
                            Tile::matrix("exact G_s (kept)".into(), r, r, g),
                            Tile::matrix("released Ĝ_s".into(), r, r, rel),
                        ],
                    )],
                    tile: 120.0,
                    note: None,
                },
                "ica-site-gradient",
            );
            Some(
                view! { <Chart markup=Signal::stored(svg) id="ica-site-gradient".to_owned() file_stem="capelab-site-gradient".to_owned() testid="ica-site-gradient" /> },
            )
        }
        _ => None,
    };
    view! {
        <section class="card site-study" data-testid="ica-site" data-computation=view.computation.clone() data-released=view.released data-max=view.max_iterations>
            <h2>"This site in the Joint ICA study"</h2>
            <p class="label">{step_title(&view.computation)}</p>
            <p class="live-phase" data-testid="ica-site-phase">{view.phase.clone()}</p>
            <p class="muted">{format!("Released {} of {}", view.released, view.max_iterations)}</p>
            {view.end.clone().map(|e| view! { <p class="callout" data-testid="ica-site-end">{e}</p> })}
            {data}
            {noise}
            {gradient}
            {(!view.refusals.is_empty()).then(|| view! { <p class="muted small">"Refused: " {view.refusals.join("; ")}</p> })}
        </section>
    }
}

/// Load a D×N matrix (CSV, or .npy) to use instead of generated subjects.
#[component]
fn OwnDataCard(study: SiteStudy) -> impl IntoView {
    let timepoints = RwSignal::new("250".to_owned());
    let error = RwSignal::new(None::<String>);
    let input = NodeRef::<leptos::html::Input>::new();
    let load = move |_| {
        let Some(el) = input.get() else { return };
        let el: web_sys::HtmlInputElement = el;
        let Ok(t) = timepoints.get_untracked().trim().parse::<usize>() else {
            error.set(Some(format!(
                "time points per subject: “{}” is not a whole number",
                timepoints.get_untracked()
            )));
            return;
        };
        leptos::task::spawn_local(async move {
            match download::picked_file_bytes(&el).await {
                Ok(Some((name, bytes))) => {
                    // Checked now so a bad file is named here, not in the middle of a study.
                    match crate::worker::engine::load_matrix(&bytes, &name, t) {
                        Ok(_) => {
                            error.set(None);
                            study.view.ica_file.set(Some(OwnData { name, bytes, timepoints: t }));
                        }
                        Err(e) => error.set(Some(e)),
                    }
                }
                Ok(None) => error.set(Some("pick a file first".into())),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <section class="card" data-testid="ica-own-data">
            <h2>"Joint ICA data"</h2>
            {move || match study.view.ica_file.get() {
                Some(file) => view! {
                    <p class="muted" data-testid="ica-own-file">
                        {format!("Using {} ({} bytes, subjects of {} time points) instead of generated subjects.", file.name, file.bytes.len(), file.timepoints)}
                    </p>
                    <button type="button" class="button button-small" on:click=move |_| study.view.ica_file.set(None)>"Use generated subjects"</button>
                }.into_any(),
                None => view! {
                    <p class="muted">"By default this tab generates its own subjects when a study starts. Or load a matrix: D voxels × N time points (CSV, or .npy), subjects of equal length; it is demeaned and clipped here and never sent."</p>
                }.into_any(),
            }}
            <div class="field-grid">
                <label>"matrix file"<input type="file" accept=".csv,.npy,text/csv" node_ref=input data-testid="ica-file-input" /></label>
                <label>"time points per subject"<input inputmode="numeric" bind:value=timepoints /></label>
            </div>
            <button type="button" class="button button-small" data-testid="ica-load-file" on:click=load>"Use this file"</button>
            {move || error.get().map(|e| view! { <p class="callout callout-error" data-testid="ica-file-error">{e}</p> })}
        </section>
    }
}
