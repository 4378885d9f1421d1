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
use crate::frame::site::SiteStudy;
use crate::studies::ica::site_view::{IcaSiteView, step_title};
use crate::studies::ica::worker_site::load_own;
use crate::worker::protocol::{NamedBytes, OwnData, OwnFiles};

#[component]
pub fn IcaSitePanel(study: SiteStudy) -> impl IntoView {
    move || study.view.ica.get().map(|view| view! { <IcaSiteStep view /> })
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

/// Load the site's own data instead of generated subjects: a D×N matrix (CSV or .npy), or one
/// NIfTI image per subject with a brain mask. Checked here, used in the worker, never sent.
#[component]
pub fn OwnDataCard(study: SiteStudy) -> impl IntoView {
    let timepoints = RwSignal::new("250".to_owned());
    let scale = RwSignal::new("1".to_owned());
    let error = RwSignal::new(None::<String>);
    let files_input = NodeRef::<leptos::html::Input>::new();
    let mask_input = NodeRef::<leptos::html::Input>::new();
    let load = move |_| {
        let (Some(files_el), Some(mask_el)) = (files_input.get(), mask_input.get()) else { return };
        let (files_el, mask_el): (web_sys::HtmlInputElement, web_sys::HtmlInputElement) =
            (files_el, mask_el);
        let scale = match scale.get_untracked().trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => v,
            _ => {
                error.set(Some(format!(
                    "public scale: “{}” is not a positive number",
                    scale.get_untracked()
                )));
                return;
            }
        };
        let timepoints = timepoints.get_untracked();
        leptos::task::spawn_local(async move {
            let picked = async {
                let files = download::picked_files_bytes(&files_el).await?;
                let mask = download::picked_files_bytes(&mask_el).await?;
                own_data(files, mask, &timepoints, scale)
            };
            match picked.await {
                Ok(own) => match load_own(&own) {
                    // Checked now, so a bad file is named here, not in the middle of a study.
                    Ok(_) => {
                        error.set(None);
                        study.view.ica_file.set(Some(own));
                    }
                    Err(e) => error.set(Some(e)),
                },
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <div data-testid="ica-own-data">
            {move || match study.view.ica_file.get() {
                Some(own) => view! {
                    <p class="muted" data-testid="ica-own-file">{format!("Using {} instead of generated subjects.", own.describe())}</p>
                    <button type="button" class="button button-small" on:click=move |_| study.view.ica_file.set(None)>"Use generated subjects"</button>
                }.into_any(),
                None => view! {
                    <p class="muted">
                        "By default this tab generates its own subjects when a study starts. Or load your own: "
                        "a matrix of D voxels × N time points (CSV or .npy, subjects of equal length), or one "
                        "4-D NIfTI image per subject (.nii, .nii.gz) with a 3-D brain mask (D = voxels inside). "
                        "It is demeaned, multiplied by the public scale and clipped here, and never sent. "
                        "Its D must be the study's."
                    </p>
                }.into_any(),
            }}
            <div class="field-grid">
                <label>"data files"<input type="file" multiple accept=".csv,.npy,.nii,.gz,text/csv" node_ref=files_input data-testid="ica-file-input" /></label>
                <label>"brain mask (NIfTI only)"<input type="file" accept=".nii,.gz" node_ref=mask_input data-testid="ica-mask-input" /></label>
                <label>"time points per subject (matrix only)"<input id="ica-own-timepoints" inputmode="numeric" bind:value=timepoints /></label>
                <label>"public scale"<input id="ica-own-scale" inputmode="decimal" bind:value=scale /></label>
            </div>
            <button type="button" class="button button-small" data-testid="ica-load-file" on:click=load>"Use these files"</button>
            {move || error.get().map(|e| view! { <p class="callout callout-error" data-testid="ica-file-error">{e}</p> })}
        </div>
    }
}

/// The picked files as [`OwnData`]: NIfTI images need the mask; one matrix file otherwise.
fn own_data(
    files: Vec<(String, Vec<u8>)>,
    mask: Vec<(String, Vec<u8>)>,
    timepoints: &str,
    scale: f64,
) -> Result<OwnData, String> {
    let is_nifti = |name: &str| {
        let n = name.to_ascii_lowercase();
        n.ends_with(".nii") || n.ends_with(".nii.gz")
    };
    if files.is_empty() {
        return Err("pick a data file first".into());
    }
    let files = if files.iter().all(|(name, _)| is_nifti(name)) {
        let Some((name, bytes)) = mask.into_iter().next() else {
            return Err("NIfTI images need a brain mask: pick one".into());
        };
        let mut subjects: Vec<NamedBytes> =
            files.into_iter().map(|(name, bytes)| NamedBytes { name, bytes }).collect();
        subjects.sort_by(|a, b| a.name.cmp(&b.name));
        OwnFiles::Nifti { subjects, mask: NamedBytes { name, bytes } }
    } else if files.len() == 1 {
        let (name, bytes) = files.into_iter().next().expect("one file");
        let timepoints = timepoints.trim().parse::<usize>().map_err(|_| {
            format!("time points per subject: “{timepoints}” is not a whole number")
        })?;
        OwnFiles::Matrix { name, bytes, timepoints }
    } else {
        return Err("pick one matrix file, or NIfTI images (.nii, .nii.gz) only".into());
    };
    Ok(OwnData { files, scale })
}
