//! Result charts, drawn with `plotters` into SVG: throughput per second
//! over the run, and the latency percentile spectrum (latency by
//! percentile, x = 1/(1-q) on a log scale, as HdrHistogram's plots draw
//! it). One run (`--plot`) or several side by side (`fjord-perf chart`,
//! e.g. Fjord and Kafka in scripts/bench-compare).
//!
//! Text is laid out by plotters' font-free size estimate (no font
//! features): an SVG viewer draws the labels with its own fonts.

use std::path::{Path, PathBuf};

use clap::Args;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use serde_json::Value;

use crate::stats::{curve_points, Report};

/// Width and height of a chart in pixels (two panels stacked).
const SIZE: (u32, u32) = (960, 760);

/// Line colours, in the order runs and curves are drawn.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The highest percentile the spectrum shows: 99.999 % (x = 10^5).
const X_MAX: f64 = 1e5;

/// Why a chart could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// plotters failed to lay out or draw an element.
    #[error("drawing the chart: {0}")]
    Draw(String),
    /// A run's JSON (`--json` output) could not be read or lacks a field.
    #[error("{path}: {reason}")]
    Input { path: PathBuf, reason: String },
    /// The SVG file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A `NAME=FILE` argument without the `=`.
    #[error("expected NAME=FILE, got {0:?}")]
    Spec(String),
}

fn draw_err<E: std::fmt::Debug>(e: E) -> ChartError {
    ChartError::Draw(format!("{e:?}"))
}

/// One run's series: its throughput per second and its latency curves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSeries {
    /// Legend name of the run (a broker's or a workload's name).
    pub label: String,
    /// (seconds since start, MB/s) per one-second sample.
    pub timeline: Vec<(f64, f64)>,
    /// (histogram name, [(quantile 0..1, latency µs)]) per histogram.
    pub curves: Vec<(String, Vec<(f64, f64)>)>,
}

impl RunSeries {
    /// The series of a finished run: its timeline, and each non-empty
    /// histogram at [`curve_points`] (µs).
    pub fn from_report(label: &str, r: &Report) -> RunSeries {
        RunSeries {
            label: label.to_string(),
            timeline: r.timeline.iter().map(|s| (s.t, s.mb_per_s)).collect(),
            curves: r
                .hists
                .iter()
                .filter(|(_, h)| !h.is_empty())
                .map(|(name, h)| {
                    let pts = curve_points()
                        .into_iter()
                        .map(|q| (q, h.value_at_quantile(q) as f64 / 1e3))
                        .collect();
                    (name.clone(), pts)
                })
                .collect(),
        }
    }

    /// The series of a run's `--json` output (`timeline` and each
    /// `latency.NAME.curve`, whose points are [quantile, µs]).
    pub fn from_json(label: &str, v: &Value) -> RunSeries {
        let timeline = v["timeline"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| Some((s["t"].as_f64()?, s["mb_per_s"].as_f64()?)))
                    .collect()
            })
            .unwrap_or_default();
        let curves = v["latency"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, h)| h["count"].as_u64().unwrap_or(0) > 0)
                    .map(|(name, h)| {
                        let pts = h["curve"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                                    .collect()
                            })
                            .unwrap_or_default();
                        (name.clone(), pts)
                    })
                    .collect()
            })
            .unwrap_or_default();
        RunSeries {
            label: label.to_string(),
            timeline,
            curves,
        }
    }
}

/// The x position of quantile `q` on the spectrum: 1/(1-q), capped at
/// [`X_MAX`] (the maximum, q = 1, sits at the right edge).
pub fn spectrum_x(q: f64) -> f64 {
    if q >= 1.0 - 1.0 / X_MAX {
        X_MAX
    } else {
        1.0 / (1.0 - q)
    }
}

/// The percentile a spectrum x position stands for: 1 → "0%",
/// 10 → "90%", 1000 → "99.9%".
pub fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 1.0 / x.max(1.0));
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A latency in milliseconds as an axis label (1000 → "1s", 0.01 → "10µs").
fn ms_label(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{}s", trim(ms / 1000.0))
    } else if ms >= 1.0 {
        format!("{}ms", trim(ms))
    } else {
        format!("{}µs", trim(ms * 1000.0))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Draws `runs` into an SVG document of two panels: throughput (MB/s)
/// per second, every run one line; below, the latency spectra of every
/// run's histograms on one log-log panel. Gives the SVG text.
pub fn render(title: &str, runs: &[RunSeries]) -> Result<String, ChartError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (top, bottom) = root.split_vertically(SIZE.1 / 2);
        throughput_panel(&top, title, runs)?;
        spectrum_panel(&bottom, runs)?;
        root.present().map_err(draw_err)?;
    }
    Ok(buf)
}

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

fn throughput_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    runs: &[RunSeries],
) -> Result<(), ChartError> {
    let pts = runs.iter().flat_map(|r| r.timeline.iter());
    let tmax = pts.clone().map(|p| p.0).fold(1.0, f64::max);
    let ymax = pts.map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{title} — throughput per second"),
            ("sans-serif", 18),
        )
        .margin(12)
        .margin_right(40)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..tmax, 0f64..ymax)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("seconds since start")
        .y_desc("MB/s")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_err)?;
    for (i, run) in runs.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(
                run.timeline.iter().copied(),
                c.stroke_width(2),
            ))
            .map_err(draw_err)?
            .label(run.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn spectrum_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    runs: &[RunSeries],
) -> Result<(), ChartError> {
    // (legend name, colour, [(x, ms)]) per curve.
    let mut curves = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for (j, (name, pts)) in run.curves.iter().enumerate() {
            let label = if runs.len() > 1 {
                format!("{} {name}", run.label)
            } else {
                name.clone()
            };
            // Each run keeps its colour; its further histograms take the
            // colours after the runs'.
            let c = if j == 0 {
                colour(i)
            } else {
                colour(runs.len() + i * 2 + j)
            };
            let line: Vec<(f64, f64)> = pts
                .iter()
                .map(|&(q, us)| (spectrum_x(q), (us / 1e3).max(1e-6)))
                .collect();
            curves.push((label, c, line));
        }
    }
    let ys = curves.iter().flat_map(|c| c.2.iter().map(|p| p.1));
    let lo = ys.clone().fold(f64::INFINITY, f64::min);
    let hi = ys.fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > 0.0 {
        let lo = 10f64.powf(lo.log10().floor());
        (lo, 10f64.powf(hi.log10().ceil()).max(lo * 10.0))
    } else {
        (1e-3, 1.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            "latency by percentile (log-log; the right edge is 99.999 %)",
            ("sans-serif", 18),
        )
        .margin(12)
        .margin_right(40)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((1f64..X_MAX).log_scale(), (lo..hi).log_scale())
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency")
        .x_label_formatter(&|x| percentile_label(*x))
        .y_label_formatter(&|y| ms_label(*y))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_err)?;
    for (label, c, line) in curves {
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))
            .map_err(draw_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    // Curves rise to the right: the lower right corner is the free one.
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

fn legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), ChartError>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw_err)
}

/// Renders `runs` (see [`render`]) and writes the SVG to `path`.
pub fn write(path: &Path, title: &str, runs: &[RunSeries]) -> Result<(), ChartError> {
    let svg = render(title, runs)?;
    std::fs::write(path, svg).map_err(|source| ChartError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// `fjord-perf chart`: several runs' `--json` outputs on one chart.
#[derive(Args, Clone)]
pub struct ChartArgs {
    /// The SVG file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// The chart's title (e.g. the workload).
    #[arg(long, default_value = "")]
    pub title: String,
    /// NAME=FILE: a run's `--json` output, drawn under NAME (repeatable;
    /// drawn in the order given).
    #[arg(required = true)]
    pub runs: Vec<String>,
}

/// Reads every `NAME=FILE` of `a` and writes their chart to `a.out`.
pub fn run(a: &ChartArgs) -> Result<(), ChartError> {
    let mut runs = Vec::new();
    for spec in &a.runs {
        let (name, file) = spec
            .split_once('=')
            .ok_or_else(|| ChartError::Spec(spec.clone()))?;
        let input = |reason: String| ChartError::Input {
            path: PathBuf::from(file),
            reason,
        };
        let text = std::fs::read_to_string(file).map_err(|e| input(e.to_string()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| input(e.to_string()))?;
        runs.push(RunSeries::from_json(name, &v));
    }
    write(&a.out, &a.title, &runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_hist, record, Sample};
    use serde_json::json;

    fn synthetic_report() -> Report {
        let mut ack = new_hist();
        for v in 1..=10_000u64 {
            // 100 µs .. ~1.1 ms, and a tail.
            record(&mut ack, 100_000 + v * 100, 1);
        }
        record(&mut ack, 40_000_000, 3);
        let mut e2e = new_hist();
        record(&mut e2e, 2_000_000, 100);
        Report {
            workload: "produce".into(),
            params: json!({}),
            elapsed_s: 3.0,
            bytes: 300_000_000,
            records: 300_000,
            errors: 0,
            timeline: (1..=3)
                .map(|t| Sample {
                    t: t as f64,
                    mb_per_s: 90.0 + t as f64 * 5.0,
                    records_per_s: 9e4,
                })
                .collect(),
            hists: vec![
                ("produce ack".into(), ack),
                ("end-to-end".into(), e2e),
                ("unused".into(), new_hist()),
            ],
            broker_cpu_s: None,
            ceiling: None,
            extra: vec![],
        }
    }

    /// The polylines drawn in `colour` (plotters writes rgb(r,g,b)).
    fn lines_in(doc: &roxmltree::Document<'_>, c: RGBColor) -> usize {
        let stroke = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .filter(|n| {
                n.attribute("stroke")
                    .is_some_and(|s| s.eq_ignore_ascii_case(&stroke))
            })
            .count()
    }

    fn texts(doc: &roxmltree::Document<'_>) -> Vec<String> {
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect()
    }

    #[test]
    fn report_chart_is_svg_with_throughput_and_both_spectra() {
        let r = synthetic_report();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("produce.svg");
        r.write_outputs(None, Some(path.to_str().unwrap())).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        assert!(doc.root_element().has_tag_name("svg"));
        // Throughput and the first histogram in the run's colour (line and
        // legend each), the second histogram in its own colour.
        assert_eq!(lines_in(&doc, colour(0)), 4, "{text}");
        assert_eq!(lines_in(&doc, colour(2)), 2);
        let t = texts(&doc);
        for want in ["produce ack", "end-to-end", "MB/s", "percentile", "99.9%"] {
            assert!(t.iter().any(|s| s == want), "no text {want:?} in {t:?}");
        }
        assert!(!t.iter().any(|s| s == "unused"), "empty histogram drawn");
    }

    #[test]
    fn side_by_side_chart_from_json_names_each_run() {
        let r = synthetic_report();
        let fjord = RunSeries::from_json("fjord", &r.to_json());
        // The same series as the run's own chart (JSON keeps the
        // histograms in name order).
        let mut direct = RunSeries::from_report("fjord", &r);
        direct.curves.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(fjord, direct);
        let mut kafka = fjord.clone();
        kafka.label = "kafka".into();
        for (_, pts) in &mut kafka.curves {
            for p in pts.iter_mut() {
                p.1 *= 3.0;
            }
        }
        let svg = render("produce acks=1", &[fjord, kafka]).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        // Each broker: throughput and first spectrum, with legend entries.
        assert_eq!(lines_in(&doc, colour(0)), 4);
        assert_eq!(lines_in(&doc, colour(1)), 4);
        let t = texts(&doc);
        for want in ["fjord", "kafka", "fjord produce ack", "kafka end-to-end"] {
            assert!(t.iter().any(|s| s == want), "no text {want:?} in {t:?}");
        }
    }

    #[test]
    fn spectrum_axis_maps_percentiles() {
        assert_eq!(spectrum_x(0.0), 1.0);
        assert!((spectrum_x(0.99) - 100.0).abs() < 1e-9);
        assert_eq!(spectrum_x(1.0), X_MAX);
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(1000.0), "99.9%");
        assert_eq!(percentile_label(1e5), "99.999%");
        assert_eq!(ms_label(0.05), "50µs");
        assert_eq!(ms_label(2000.0), "2s");
    }

    #[test]
    fn chart_command_reads_runs_and_rejects_bad_specs() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("run.json");
        std::fs::write(&j, synthetic_report().to_json().to_string()).unwrap();
        let out = dir.path().join("c.svg");
        let a = ChartArgs {
            out: out.clone(),
            title: "t".into(),
            runs: vec![format!("fjord={}", j.display())],
        };
        run(&a).unwrap();
        assert!(roxmltree::Document::parse(&std::fs::read_to_string(&out).unwrap()).is_ok());
        let bad = ChartArgs {
            runs: vec!["no-equals".into()],
            ..a.clone()
        };
        assert!(matches!(run(&bad), Err(ChartError::Spec(_))));
        let missing = ChartArgs {
            runs: vec![format!("x={}", dir.path().join("none.json").display())],
            ..a
        };
        assert!(matches!(run(&missing), Err(ChartError::Input { .. })));
    }
}
